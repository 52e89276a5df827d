"""LTI 1.3 (issue 30): an assignment opened from the LMS a course already uses (Canvas, Moodle,
Blackboard) signs the student in and places them in the mapped course, and the assignment's score
goes back to the LMS's gradebook (Assignment and Grade Services) when it changes, deadline and
late penalty applied as in our own gradebook.

    platforms.py   the trusted platforms (settings.lti_platforms), the tool's own key, and every
                   request to an LMS bounded in time and bytes
    launch.py      login initiation, the launch (id token checked: signature by the platform's
                   keys, issuer, audience, deployment, expiry, one-use state and nonce), deep
                   linking (an instructor picks the assignment a link opens)
    scores.py      the scores sent back, each when it changes
"""
