"""OneBot v11 (QQ through NapCat, Lagrange.OneBot, LLOneBot): `ania serve`.

- `connection`: the WebSocket link, forward (Ania dials) or reverse (Ania listens), access token,
  echo-matched API calls with a deadline, reconnect with backoff, heartbeat watchdog;
- `message`: segment arrays and CQ-code strings, read once into `Content` (the model's text, the typed
  text, mentions, images, the quote, file ids), splitting long replies;
- `events`: message events as `Incoming`, the allow/block lists, group prefixes;
- `outbound`: sends (split, retried once, logged when lost), uploads, history, file URLs, image bytes;
- `bridge`: `OneBotBridge`, the callback bridge (T7) of one incoming message;
- `adapter`: `OneBotAdapter`, which ties them to message entry and the engine's outboxes;
- `serve`: `run_serve`, the process: start, serve until SIGINT/SIGTERM, shut down cleanly.
"""

from ania.platforms.onebot.adapter import OneBotAdapter
from ania.platforms.onebot.serve import run_serve

__all__ = ["OneBotAdapter", "run_serve"]
