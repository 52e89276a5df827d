"""The server-rendered pages (routes; templates in web/templates), their Markdown (markdown) and
the instructor pages' words (instructor_text)."""
