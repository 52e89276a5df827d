"""Tests of the page's Run: the page runner, its parity with the server, the front end's units."""
