"""The model's HTTP client (services/llm/http.py) through the real `ChatOpenAI`: a refused or dropped
connection is a connection error, and only a slow endpoint is a timeout (httpx-aiohttp alone reports all
three as timeouts, so the user would read "the request timed out" for a model that is not running)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import openai
import pytest
from langchain_openai import ChatOpenAI

from ania.fakes.openai_server import Reply, ScriptedOpenAI
from services.llm.http import model_http_client


async def ask(base_url: str, timeout: float = 5.0) -> str:
    client = model_http_client(timeout)
    try:
        model = ChatOpenAI(model="m", base_url=base_url, api_key="k", http_async_client=client, max_retries=0,
                           timeout=timeout)
        return str((await model.ainvoke("hi")).content)
    finally:
        await client.aclose()


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[[Callable[..., Awaitable[None]]], Awaitable[str]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Callable[..., Awaitable[None]]) -> str:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"

    yield start
    for server in servers:
        server.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_answer_comes_back():
    with ScriptedOpenAI() as llm:
        llm.script([Reply("hello")])
        assert await ask(llm.base_url) == "hello"


async def test_a_refused_connection_is_a_connection_error_not_a_timeout():
    with pytest.raises(openai.APIConnectionError) as caught:
        await ask(f"http://127.0.0.1:{free_port()}/v1")
    assert not isinstance(caught.value, openai.APITimeoutError)


async def test_a_connection_dropped_before_the_answer_is_a_connection_error(raw_server):
    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    with pytest.raises(openai.APIConnectionError) as caught:
        await ask(await raw_server(drop))
    assert not isinstance(caught.value, openai.APITimeoutError)


async def test_a_connection_dropped_in_the_middle_of_the_body_is_not_a_timeout(raw_server):
    async def half(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":")
        await writer.drain()
        writer.close()

    with pytest.raises(Exception) as caught:
        await ask(await raw_server(half))
    assert not isinstance(caught.value, openai.APITimeoutError | TimeoutError)


async def test_a_silent_endpoint_is_a_timeout(raw_server):
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    with pytest.raises(openai.APITimeoutError):
        await ask(await raw_server(silent), timeout=0.5)
