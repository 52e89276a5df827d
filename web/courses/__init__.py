"""Courses, without HTTP routes: members with a role each (instructor, assistant, student), a join
code or a roster, assignments with deadlines (service), and where a student stands on each
(standing; the gradebooks are web.store.assignment_book). Their pages are web/pages/courses.py."""
