"""The `judge` command's core verbs (main) and their terminal output: tables, colours and the
words of the user's language (console, trace_text). The only room of the judge that prints."""
