"""People who sign in: passwords (argon2), server-side sessions behind signed cookies, sign-up,
sign-in and sign-out, optional OpenID Connect. Anonymous visitors (web.api.identity) need none of
it; a signed-in account acts through its own visitor row, so everything downstream is the same."""
