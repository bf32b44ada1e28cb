"""The labels a page script needs, in the request's language: one concern's catalog (keys without the prefix)
and the common ones, for a `<script type="application/json" id="labels">` block (the CSP allows no inline
script, so a script reads its words from there)."""

from __future__ import annotations

from starlette.requests import Request

from ania.panel.i18n import language


def script_labels(request: Request, concern: str) -> dict[str, str]:
    catalogs = request.app.state.catalogs
    lang = language(request)
    out: dict[str, str] = {}
    for source in (catalogs["en"], catalogs.get(lang, {})):  # English first, the request's language over it
        for key, text in source.items():
            if key.startswith("common."):
                out[key] = text
            elif key.startswith(concern + "."):
                out[key[len(concern) + 1:]] = text
    return out
