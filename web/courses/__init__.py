"""Courses: members with a role each (instructor, assistant, student), a join code or a roster,
assignments with deadlines, and their gradebooks (web.store.assignment_book)."""
