"""The server-rendered pages, each a router: the problem list, problem page, submissions and the
instructor's page (routes), sign-up and sign-in (sign_in), the account page and its settings
(account, account_settings), OpenID Connect (oidc), courses (courses), the student's package
(packages), the page's Python sandbox frame (sandbox). `render` draws them all (templates in
web/templates, their words looked up in judge/messages); their Markdown is markdown, the problem
list's filters problem_list."""
