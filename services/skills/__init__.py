"""Skills (S1-S4): folders with a SKILL.md (Anthropic's format) the model reads when a task needs them.

How the modules fit:
- `parse`: one SKILL.md, its YAML frontmatter read with python-frontmatter (name, description).
- `registry`: the skills of the two roots (shipped `skills/`, installed `<data>/skills`; installed wins),
  the optional allow-list, the `available_skills` block of the system prompt, `skill_read`'s safe paths,
  and the atomic swap on reload.
- `fetch`: what an install source is (SKILL.md text, GitHub URL → codeload zip, other URL) and a download
  with a size cap, a deadline and http(s)-only redirects.
- `archive`: unpacking a zip that is not trusted (zip-slip, symlinks, entry count, unpacked size).
- `install`: install and remove in `<data>/skills`, atomic, logged, then reload.
"""

from services.skills.install import SkillInstaller
from services.skills.parse import Skill, SkillError, parse_skill_text
from services.skills.registry import Root, SkillRegistry, SkillSet

__all__ = ["Root", "Skill", "SkillError", "SkillInstaller", "SkillRegistry", "SkillSet", "parse_skill_text"]
