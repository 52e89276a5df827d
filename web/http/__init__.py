"""What every request passes through, for the routers above (web/api/, web/pages/, web/lti/):
the edge guard (sizes, origins, worker tokens: edge), the server's in-memory limits (throttle),
security headers (headers), bounded JSON input and path ids (request_input), errors as JSON
(errors), who is asking (identity: visitor tokens, personal tokens, the instructor), the reader's
language (lang), and which problems a request may see (drafts). No routes live here; this room
imports web.services, web.accounts, web.courses and web.store, never a router."""
