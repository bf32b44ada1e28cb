"""The operator's web panel (issue 24): server-rendered pages over the engine's own services.

- `app`: `build_app(ctx)` assembles the Starlette app from the page modules (`PAGE_MODULES`).
- `context`: `PanelContext` (the engine, the reboot seam, the login state) and `panel_context(request)`.
- `auth`: the secret token, the password's slow hash, sessions with their CSRF tokens, login rate limits.
- `guard`: the ASGI middleware every request passes (Host, Origin, credentials, CSRF).
- `render`, `i18n`, `nav`: pages, labels (en, zh) and the sidebar; `oplog`: the panel's operation-log rows.
- `pages/<concern>.py`: one module per page, each exporting `routes()` (the page and its JSON API).
- `server`: running it with uvicorn in the bot's event loop (`ania serve`, `ania chat`, `ania panel`).
"""
