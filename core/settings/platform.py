"""The settings of the QQ platform and its built-in tools (T5-T7): `[onebot]`, `[web]`, `[meme]` and
`[files]`, kept apart from core/settings/sections.py so that each module stays one screenful of sections.
core/settings/__init__.py assembles both into `Settings`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OneBotSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    ws_url: str = Field("", description="Forward WebSocket: the implementation's server Ania dials, e.g. ws://127.0.0.1:3001")
    listen: str = Field("", description="Reverse WebSocket: host:port Ania listens on, e.g. 127.0.0.1:8080")
    path: str = Field("/onebot/v11/ws", description="Reverse WebSocket: the URL path the implementation dials")
    access_token: str = Field(
        "", description="OneBot access token (Authorization: Bearer) both ways; needed to listen beyond loopback",
        json_schema_extra={"sensitive": True},
    )
    api_timeout_sec: float = Field(30.0, gt=0, le=600, description="Deadline of one OneBot API call")
    reconnect_max_sec: float = Field(30.0, ge=1, le=600, description="Longest wait between forward reconnects")
    heartbeat_floor_sec: float = Field(
        5.0, gt=0, le=600, description="A link silent for three heartbeat intervals is closed, never sooner than this"
    )
    max_message_runes: int = Field(
        3000, ge=100, le=100_000, description="Longer replies are split on paragraph boundaries into several messages"
    )
    shutdown_grace_sec: float = Field(
        30.0, ge=0, le=600, description="On SIGINT/SIGTERM, how long running turns may finish before they are stopped"
    )
    allow_private_hosts: bool = Field(
        False, description="load_images may download an image segment's URL on loopback or a private network")


class WebSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    jina_api_key: str = Field("", description="Jina API key (optional; higher rate limits)",
                              json_schema_extra={"sensitive": True})
    search_url: str = Field("https://s.jina.ai/", description="webSearch endpoint (Jina search API or compatible)")
    reader_url: str = Field("https://r.jina.ai/", description="webExplore endpoint (Jina reader or a self-hosted one)")
    timeout_sec: float = Field(30.0, gt=0, le=300, description="Deadline of one web request")
    allow_private_hosts: bool = Field(
        False, description="webExplore without a reader, and redirects, may reach loopback or private-network hosts")


class MemeSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    url: str = Field(
        "https://api.giphy.com/v1/stickers/search?api_key=${key}&q=${msg}&limit=${num}",
        description="Request URL template: ${msg} search words, ${num} count, ${key} the API key",
    )
    key: str = Field("", description="API key put into ${key} (GIPHY: a free key)",
                     json_schema_extra={"sensitive": True})
    list_path: str = Field("data", description="GJSON path of the result list in the response")
    img_field: str = Field("images.fixed_width.url", description="GJSON path of the image URL inside one result")
    timeout_sec: float = Field(20.0, gt=0, le=300, description="Deadline of the search and of each image download")
    allow_private_hosts: bool = Field(
        False, description="meme may download images from loopback or private-network addresses the API names")


class FilesSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    allowed_dirs: list[str] = Field(
        default_factory=list,
        description="Directories send_file and local_image may read (empty = both tools off); nothing outside",
    )
    max_file_mb: float = Field(20.0, gt=0, le=1024, description="Largest file send_file sends")
