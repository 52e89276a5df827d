# The fixture problem's own tests are run by the graders, never collected by the project's pytest.
collect_ignore_glob = ["fixtures/*"]
