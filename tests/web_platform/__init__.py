"""Tests of the web platform (web/): API, pages, jobs, workers, accounts, courses."""
