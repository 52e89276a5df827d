"""The server-rendered pages (routes; templates in web/templates, their words looked up in
judge/messages) and their Markdown (markdown)."""
