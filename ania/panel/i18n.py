"""Labels in English and Chinese. `i18n/<concern>.json` = {"en": {...}, "zh": {...}}; a page's keys are
read as `<concern>.<key>` (`t("config.title")`), the common file's as they are (`t("nav.config")`). The
language: the `lang` cookie (set from the sidebar), else the browser's Accept-Language (zh* → zh), else en."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import pass_context
from jinja2.runtime import Context
from starlette.requests import Request

from core.errors import DeveloperError

LANGS = ("en", "zh")
I18N_DIR = Path(__file__).with_name("i18n")
COMMON = "common"


def load_catalogs(directory: Path = I18N_DIR) -> dict[str, dict[str, str]]:
    """Every catalog merged per language; a file that is not valid is a developer's mistake (tests load it)."""
    out: dict[str, dict[str, str]] = {lang: {} for lang in LANGS}
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise DeveloperError(f"{path.name}: {e}") from None
        prefix = "" if path.stem == COMMON else f"{path.stem}."
        for lang in LANGS:
            for key, text in (data.get(lang) or {}).items():
                out[lang][prefix + key] = str(text)
    return out


def language(request: Request) -> str:
    chosen = request.cookies.get("lang", "")
    if chosen in LANGS:
        return chosen
    weighted: list[tuple[float, int, str]] = []
    for n, part in enumerate(request.headers.get("accept-language", "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        weighted.append((-q, n, tag.strip().lower()))
    for _, _, tag in sorted(weighted):
        if tag.startswith("zh"):
            return "zh"
        if tag.startswith("en"):
            return "en"
    return "en"


def translate(catalogs: dict[str, dict[str, str]], lang: str, key: str, **values: Any) -> str:
    """The label in `lang`, else in English, else the key itself (a missing label shows, it does not break)."""
    text = catalogs.get(lang, {}).get(key) or catalogs["en"].get(key) or key
    return text.format(**values) if values else text


@pass_context
def t(context: Context, key: str, **values: Any) -> str:
    """The templates' `t(key)`: in the page's language (render puts `lang` and the catalogs in the context)."""
    return translate(context["catalogs"], context["lang"], key, **values)
