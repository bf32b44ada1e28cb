"""Every label a template asks for exists in English and in Chinese (a page of any concern: the test reads
every template), and the catalogs load."""

from __future__ import annotations

import re

from ania.panel.app import HERE, PAGE_MODULES, available_pages
from ania.panel.i18n import LANGS, load_catalogs
from ania.panel.nav import NAV

#: t('key') or t('key', value=...); a computed key (t('x.kind_' + kind)) is not checked here.
KEY = re.compile(r"""\bt\(\s*['"]([\w.]+)['"]\s*[,)]""")


def test_every_label_of_every_template_is_in_both_languages():
    catalogs = load_catalogs()
    used = {key for path in (HERE / "templates").glob("*.html") for key in KEY.findall(path.read_text())}
    used |= {item.label for item in NAV}
    assert used, "no label found: the pattern no longer matches the templates"
    for lang in LANGS:
        missing = sorted(k for k in used if k not in catalogs[lang])
        assert not missing, f"labels missing in {lang}: {missing}"
    assert set(catalogs["en"]) == set(catalogs["zh"]), set(catalogs["en"]) ^ set(catalogs["zh"])


def test_the_sidebar_names_every_page_of_the_issue_and_only_existing_modules_are_served():
    assert [item.concern for item in NAV] == list(PAGE_MODULES)
    assert {"overview", "config", "ops", "approvals"} <= set(available_pages()) <= set(PAGE_MODULES)
