"""The panel's door (ania/panel/guard.py, auth.py, login.py): who gets in, which requests are refused before
any route runs, and what a login leaves in the browser."""

from __future__ import annotations

import asyncio
import os
import stat

import httpx
import pytest

from ania.panel.auth import PanelAuth, hash_password, verify_password
from ania.panel.listen import split_listen
from ania.panel.server import PanelServer
from core.errors import ConfigError, RunError
from core.settings import PanelSettings
from tests.panel_helpers import FOREIGN, ORIGIN, open_panel

STATE_CHANGING = [("PUT", "/api/config/quota.global_daily_tokens", {"value": 1000}),
                  ("POST", "/api/reboot", None), ("POST", "/api/approvals/abcd", {"decision": "allow"})]


async def test_without_credentials_the_api_answers_401_and_a_page_sends_to_login(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        for path in ("/api/overview", "/api/config", "/api/ops", "/api/approvals"):
            r = await p.anon.get(path)
            assert r.status_code == 401 and "log in" in r.json()["error"], path
        for path in ("/", "/config", "/ops", "/approvals"):
            r = await p.anon.get(path)
            assert (r.status_code, r.headers["location"]) == (303, "/login"), path
        for method, path, body in STATE_CHANGING:
            r = await p.anon.request(method, path, json=body, headers={"Origin": ORIGIN})
            assert r.status_code == 401, path
        assert (await p.anon.get("/login")).status_code == 200  # the login page and static files are open
        assert (await p.anon.get("/static/panel.js")).status_code == 200
        assert p.ops() == []


async def test_a_wrong_bearer_token_is_refused_not_ignored(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        browser, _ = await p.login()
        for header in ("Bearer nope", f"Bearer {p.token}x", f"Basic {p.token}", p.token):
            r = await browser.get("/api/overview", headers={"Authorization": header})
            assert r.status_code == 401 and "wrong token" in r.json()["error"], header  # even with a good cookie
        assert (await p.client.get("/api/overview")).status_code == 200


async def test_a_session_needs_its_csrf_token_for_every_change(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        browser, csrf = await p.login()
        for method, path, body in STATE_CHANGING:
            for headers in ({"Origin": ORIGIN}, {"Origin": ORIGIN, "X-CSRF-Token": "forged"}):
                r = await browser.request(method, path, json=body, headers=headers)
                assert r.status_code == 403 and "CSRF" in r.json()["error"], (path, headers)
        r = await browser.put("/api/config/quota.global_daily_tokens", json={"value": 1000},
                              headers={"Origin": ORIGIN, "X-CSRF-Token": csrf})
        assert r.status_code == 200, r.text
        r = await browser.post("/logout", data={"csrf": "forged"}, headers={"Origin": ORIGIN})
        assert r.status_code == 403
        r = await browser.post("/logout", data={"csrf": csrf}, headers={"Origin": ORIGIN})  # a form's hidden field
        assert (r.status_code, r.headers["location"]) == (303, "/login")
        assert (await browser.get("/api/overview")).status_code == 401  # the session is gone
        assert [o["actor"] for o in p.ops("config_set")] == ["panel"]


async def test_a_foreign_origin_is_refused_even_with_the_token(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        browser, csrf = await p.login()
        for method, path, body in STATE_CHANGING:
            for client, extra in ((p.client, {}), (browser, {"X-CSRF-Token": csrf})):
                for origin in (FOREIGN, "null", "http://127.0.0.1:6191", "https://127.0.0.1:6190"):
                    r = await client.request(method, path, json=body, headers={"Origin": origin, **extra})
                    assert r.status_code == 403 and "another web site" in r.json()["error"], (path, origin)
        r = await p.anon.post("/login", data={"password": "x" * 12}, headers={"Origin": FOREIGN})
        assert r.status_code == 403  # no login from another site either
        assert p.ops() == []


async def test_a_rebound_host_name_is_refused(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        for host in ("evil.example", "evil.example:6190", "127.0.0.1.nip.io:6190", ""):
            r = await p.client.get("/api/overview", headers={"Host": host})
            assert r.status_code == 403 and "Host" in r.json()["error"], host
            r = await p.anon.get(f"/login?token={p.token}", headers={"Host": host})
            assert r.status_code == 403, host
        for host in ("127.0.0.1:6190", "localhost:6190", "[::1]:6190"):
            assert (await p.client.get("/api/overview", headers={"Host": host})).status_code == 200, host


async def test_the_public_url_is_the_panels_own_origin_and_host(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        p.ctx.extra_origins = ("https://panel.example.com",)
        from ania.panel.app import build_app

        p.app = build_app(p.ctx)
        client = p.new_client(Authorization=f"Bearer {p.token}", Host="panel.example.com")
        r = await client.put("/api/config/quota.global_daily_tokens", json={"value": 5},
                             headers={"Origin": "https://panel.example.com"})
        assert r.status_code == 200, r.text
        r = await client.put("/api/config/quota.global_daily_tokens", json={"value": 5},
                             headers={"Origin": "https://evil.example.com"})
        assert r.status_code == 403
        await client.aclose()


async def test_no_cors_and_protective_headers_on_every_answer(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        for r in (await p.client.get("/api/overview", headers={"Origin": FOREIGN}),
                  await p.anon.options("/api/config", headers={"Origin": FOREIGN,
                                                               "Access-Control-Request-Method": "PUT"}),
                  await p.anon.get("/login"), await p.anon.get("/api/ops")):
            assert not any(k.lower().startswith("access-control-") for k in r.headers)
            assert r.headers["x-frame-options"] == "DENY"
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
            assert "script-src 'self'" in r.headers["content-security-policy"]
            assert r.headers["referrer-policy"] == "no-referrer"  # the login link's token never leaks on
            assert r.headers["cache-control"] == "no-store"


async def test_the_login_link_sets_a_strict_httponly_cookie_and_drops_the_token_from_the_address(
        tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        r = await p.anon.get(f"/login?token={p.token}")
        assert (r.status_code, r.headers["location"]) == (303, "/")
        cookie = r.headers["set-cookie"]
        assert "ania_panel=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert p.token not in cookie
        assert (await p.anon.get("/api/overview")).status_code == 200  # the client keeps the cookie
        token_file = p.ctx.auth.token_path
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        page = await p.anon.get("/")
        assert p.token not in page.text


async def test_failed_logins_are_rate_limited_per_client(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        for _ in range(5):
            r = await p.anon.get("/login?token=guess")
            assert r.status_code == 401 and "not valid" in r.text
        r = await p.anon.get(f"/login?token={p.token}")  # even the right token, until the minute passes
        assert r.status_code == 429 and "Too many" in r.text
        r = await p.anon.post("/login", data={"password": "whatever-long"}, headers={"Origin": ORIGIN})
        assert r.status_code == 429
        assert (await p.client.get("/api/overview")).status_code == 200  # the bearer is not a login


async def test_a_password_replaces_the_link(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        with pytest.raises(ValueError, match="at least"):
            p.ctx.auth.set_password("short")
        p.ctx.auth.set_password("correct horse battery")
        assert stat.S_IMODE(os.stat(p.ctx.auth.password_path).st_mode) == 0o600
        assert "correct horse" not in p.ctx.auth.password_path.read_text()
        r = await p.anon.get(f"/login?token={p.token}")
        assert r.status_code == 401 and "password is set" in r.text
        r = await p.anon.post("/login", data={"password": "wrong password!"}, headers={"Origin": ORIGIN})
        assert r.status_code == 401 and "Wrong password" in r.text
        r = await p.anon.post("/login", data={"password": "correct horse battery"}, headers={"Origin": ORIGIN})
        assert (r.status_code, r.headers["location"]) == (303, "/")
        assert (await p.anon.get("/api/overview")).status_code == 200
        assert (await p.client.get("/api/overview")).status_code == 200  # scripts keep the bearer token


def test_password_hashes_are_salted_and_slow_and_a_damaged_file_matches_nothing():
    one, two = hash_password("same password"), hash_password("same password")
    assert one != two and one.startswith("scrypt$32768$8$1$")
    assert verify_password("same password", one) and not verify_password("same passwore", one)
    assert not verify_password("same password", "garbage") and not verify_password("x", "scrypt$1$2$3$zz$yy")


def test_the_token_is_made_once_and_renewing_it_logs_everyone_out(tmp_path):
    auth = PanelAuth(tmp_path, PanelSettings())
    token, made = auth.ensure_token()
    assert made and len(token) >= 40
    again = PanelAuth(tmp_path, PanelSettings())
    assert again.ensure_token() == (token, False)
    session = again.open_session()
    fresh = again.new_token()
    assert fresh != token and again.session(session.sid) is None
    assert again.token_ok(fresh) and not again.token_ok(token)


@pytest.mark.parametrize("listen", ["6190", "127.0.0.1", "127.0.0.1:x", ":6190", "127.0.0.1:70000"])
def test_a_bad_listen_address_is_one_clear_error(listen):
    with pytest.raises(ConfigError, match=r"panel\.listen must be host:port"):
        split_listen(listen)


async def test_beyond_loopback_needs_a_password(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        server = PanelServer(p.ctx.engine, PanelSettings(listen="0.0.0.0:6190"), mode="serve", say=lambda _: None)
        with pytest.raises(RunError, match="set a password first"):
            await server.start()


async def test_the_real_server_prints_the_link_once_and_refuses_a_taken_port(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        p.ctx.auth.token_path.unlink()  # a data directory where the panel never ran
        said: list[str] = []
        settings = PanelSettings(listen="127.0.0.1:0")
        server = PanelServer(p.ctx.engine, settings, mode="serve", say=said.append)
        with pytest.raises(ConfigError):  # port 0 is not a port an operator can open
            await server.start()
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        settings = PanelSettings(listen=f"127.0.0.1:{port}")
        server = PanelServer(p.ctx.engine, settings, mode="serve", say=said.append)
        await server.start()
        try:
            assert len(said) == 1 and f"http://127.0.0.1:{port}/login?token=" in said[0]
            token = said[0].split("token=")[1].split()[0]
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as real:
                r = await real.get("/api/overview", headers={"Authorization": f"Bearer {token}"})
                assert r.status_code == 200 and r.json()["mode"] == "serve"
            second = PanelServer(p.ctx.engine, settings, mode="serve", say=said.append)
            with pytest.raises(RunError, match="cannot listen"):
                await second.start()
        finally:
            await server.stop()
        again = PanelServer(p.ctx.engine, settings, mode="serve", say=said.append)
        await again.start()
        await again.stop()
        assert "token=" not in said[-1]  # printed once, at first start
        await asyncio.sleep(0)
