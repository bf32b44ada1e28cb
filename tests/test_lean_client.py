"""The one private-API override (services/llm/lean_openai.py) fails loudly here when langchain-openai changes."""

from __future__ import annotations

import inspect
import json
from importlib.metadata import version

import httpx
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from packaging.specifiers import SpecifierSet

from services.llm.lean_openai import LeanChatOpenAI
from services.versions import CHECKED

TOOLS = [{"type": "function", "function": {"name": "time", "description": "Now.",
                                           "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}]
HISTORY = [SystemMessage("sys"), HumanMessage("什么时间?"),
           AIMessage("", tool_calls=[{"id": "c1", "name": "time", "args": {"tz": "UTC"}}]),
           ToolMessage("12:00", tool_call_id="c1"), HumanMessage("thanks")]


def test_installed_langchain_openai_is_a_checked_version():
    assert version("langchain-openai") in SpecifierSet(CHECKED["langchain-openai"])


def test_the_overridden_method_still_has_its_signature():
    params = inspect.signature(ChatOpenAI._get_request_payload).parameters
    assert list(params)[:2] == ["self", "input_"] and "stop" in params


async def test_wire_bytes_equal_the_stock_clients(scripted_llm):
    bodies = []
    for cls in (ChatOpenAI, LeanChatOpenAI):
        async with httpx.AsyncClient() as http:
            model = cls(base_url=scripted_llm.base_url, api_key="k", model="scripted-model", max_retries=0,
                        http_async_client=http, stream_usage=True)
            await model.bind_tools(TOOLS).ainvoke(HISTORY)
        bodies.append(scripted_llm.requests[-1].raw)
    stock, lean = bodies
    assert lean == stock  # byte for byte: the provider sees the same request
    lean = json.loads(lean)
    assert lean["messages"][1]["content"] == "什么时间?" and lean["tools"] == TOOLS
