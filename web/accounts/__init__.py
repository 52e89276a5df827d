"""People who sign in, without HTTP routes: passwords (argon2) and sign-up rules (service),
server-side sessions behind signed cookies (sessions), personal API tokens (api_tokens).
Anonymous visitors (web.http.identity) need none of it; a signed-in account acts through its own
visitor row, so everything downstream is the same. The pages that use them (sign-in, the account
page and its settings, OpenID Connect) are in web/pages/."""
