"""`[recall]`: knowledge and memory recalled into the turn (F3).

Before a turn's first model call the engine searches the chat's knowledge base (its own and the global
one) and its memory for the new message, and quotes the best passages in a block at the end of the user's
message (never in the system prompt: the cached prefix stays byte-stable). nodes/recall.py builds the
block, services/recall.py finds and scores the passages.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RecallSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(True, description="Recall knowledge and memory into each new message of a chat "
                                           "(needs knowledge.enable)")
    knowledge: bool = Field(True, description="Recall passages of the chat's and the global knowledge base")
    memory: bool = Field(True, description="Recall the chat's long-term memories")
    top_k: int = Field(3, ge=1, le=20, description="Most passages one message gets (knowledge and memory together)")
    min_score: float = Field(
        0.6, ge=0, le=1,
        description="Score floor, 0..1: the share of the message's search terms found in the passage (one-"
                    "character terms count half), or the cosine similarity when embeddings are on, the higher",
    )
    max_runes: int = Field(1500, ge=100, le=20_000,
                           description="Characters of quoted passages one message gets at most; the last one is cut")
    subagents: bool = Field(False, description="Subagents and team members get recall into their task too")
    clock: bool = Field(False, description="Scheduled-task runs get recall into their task too")
