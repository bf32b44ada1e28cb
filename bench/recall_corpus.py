"""The recall benchmark's corpus (bench/bench_recall.py), generated: deterministic for a seed, nothing
downloaded. Written for this benchmark.

A chat group's notices about many clubs, half Chinese and half English: one paragraph per club (when it
meets, its fee, whom to ask, what members may borrow), twenty clubs to a document, so that a document is
split into passages of several clubs each and thousands of passages look alike but for the club's name.
Questions ask one fact of one club, with the phrase of the answer (`answer`) that a recalled passage must
contain; memories are facts about people of the chat, with their questions; small talk asks nothing the
corpus holds (what it recalls is a false injection).
"""

from __future__ import annotations

import itertools
import random
from typing import NamedTuple

CLUBS_PER_DOC = 20

_ZH_A = "青松云海星月晨曦竹溪枫林白鹭金桥银杏南山北湖东篱西岭春江秋水远帆清泉明川雪峰"
_ZH_KIND = ["读书会", "羽毛球社", "摄影协会", "编程小组", "围棋社", "合唱团", "徒步俱乐部", "书法班", "桌游社", "天文小组"]
_ZH_DAY = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"]
_ZH_PLACE = ["社区活动中心", "图书馆三楼", "体育馆二号场", "文化宫小礼堂", "大学城咖啡馆", "科技园会议室", "公园东门凉亭"]
_ZH_PEOPLE = ["阿明", "小雨", "老周", "晓峰", "丽娜", "大刘", "阿杰", "小芳", "王老师", "陈姐"]
_ZH_ITEMS = ["投影仪", "相机", "帐篷", "望远镜", "棋盘", "乐谱", "音箱", "笔墨纸砚"]
_EN_A = ["Maple", "Harbor", "Cedar", "Willow", "Granite", "Aurora", "Falcon", "Juniper", "Meadow", "Copper",
         "Lantern", "Summit", "Orchard", "Riverside", "Thistle", "Beacon", "Saffron", "Hollow"]
_EN_B = ["Lane", "Bay", "Ridge", "Park", "Hill", "Grove", "Point", "Field", "Brook", "Gate"]
_EN_KIND = ["Book Club", "Chess Circle", "Photo Society", "Coding Group", "Choir", "Hiking Club", "Board Game Night",
            "Astronomy Group", "Pottery Studio", "Running Club"]
_EN_DAY = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_EN_PLACE = ["the community hall", "the library annex", "the old fire station", "room 12 of the town hall",
             "the river pavilion", "the school gym", "the back room of the Blue Cup cafe"]
_EN_PEOPLE = ["Dana", "Priya", "Marco", "Helen", "Tomas", "Aisha", "Kenji", "Lucia", "Oskar", "Nadia"]
_EN_ITEMS = ["projector", "camera", "tent", "telescope", "chess clock", "sheet music", "speaker", "pottery wheel"]


class Question(NamedTuple):
    lang: str
    kind: str  # "knowledge", "memory" or "smalltalk" (no answer: anything recalled is a false injection)
    text: str
    answer: str


class Club(NamedTuple):
    lang: str
    name: str
    paragraph: str
    questions: list[Question]


class _Lang(NamedTuple):
    """One language's vocabulary and templates (fields: name, day, hour, place, fee, person, item, days)."""

    days: list[str]
    places: list[str]
    people: list[str]
    items: list[str]
    fees: tuple[int, int, int]
    paragraph: str
    #: (question, the phrase of the answer) templates
    asks: list[tuple[str, str]]


_LANGS = {
    "zh": _Lang(_ZH_DAY, _ZH_PLACE, _ZH_PEOPLE, _ZH_ITEMS, (60, 400, 10),
                "{name}每{day}晚上{hour}点在{place}活动，新人可以免费旁听两次。{name}的年费是{fee}元，学生半价。"
                "有关{name}的问题请联系{person}，一般两天内回复。{name}的成员可以借用{item}，最长{days}天，归还时请保持完好。",
                [("{name}什么时候活动？", "{name}每{day}晚上{hour}点"), ("{name}的年费是多少？", "{name}的年费是{fee}元"),
                 ("{name}有问题应该找谁？", "有关{name}的问题请联系{person}"),
                 ("{name}的{item}能借多久？", "可以借用{item}，最长{days}天")]),
    "en": _Lang(_EN_DAY, _EN_PLACE, _EN_PEOPLE, _EN_ITEMS, (20, 200, 5),
                "The {name} meets every {day} at {hour} pm in {place}; newcomers may attend twice for free. "
                "Membership of the {name} costs {fee} dollars a year, half for students. Questions about the {name} "
                "go to {person}, who answers within two days. Members of the {name} may borrow the {item} for up to "
                "{days} days and return it clean.",
                [("When does the {name} meet?", "The {name} meets every {day} at {hour} pm"),
                 ("How much is a membership of the {name}?", "costs {fee} dollars a year"),
                 ("Who answers questions about the {name}?", "the {name} go to {person}"),
                 ("How long can I borrow the {item} of the {name}?", "{item} for up to {days} days")]),
}


def _club(lang: str, name: str, rng: random.Random) -> Club:
    t = _LANGS[lang]
    facts = {"name": name, "day": rng.choice(t.days), "hour": rng.randint(6, 9), "place": rng.choice(t.places),
             "fee": rng.randrange(*t.fees), "person": rng.choice(t.people), "item": rng.choice(t.items),
             "days": rng.randint(2, 14)}
    qs = [Question(lang, "knowledge", q.format(**facts), a.format(**facts)) for q, a in t.asks]
    return Club(lang, name, t.paragraph.format(**facts), qs)


def _names(lang: str) -> list[str]:
    if lang == "zh":
        return [a + b + kind for kind in _ZH_KIND for a, b in itertools.permutations(_ZH_A, 2)]
    return [f"{a} {b} {kind}" for kind in _EN_KIND for a in _EN_A for b in _EN_B]


def clubs(n: int, seed: int = 11) -> list[Club]:
    """`n` clubs, alternately Chinese and English, each name used once."""
    rng = random.Random(seed)
    zh, en = _names("zh"), _names("en")
    rng.shuffle(zh)
    rng.shuffle(en)
    if n // 2 + 1 > min(len(zh), len(en)):
        raise ValueError(f"at most {2 * min(len(zh), len(en))} clubs")
    out = []
    for i in range(n):
        out.append(_club("zh", zh[i // 2], rng) if i % 2 == 0 else _club("en", en[i // 2], rng))
    return out


def documents(all_clubs: list[Club]) -> list[tuple[str, str]]:
    """(title, text): the clubs of one language, CLUBS_PER_DOC to a document, a paragraph each."""
    out = []
    for lang in ("zh", "en"):
        mine = [c for c in all_clubs if c.lang == lang]
        for n in range(0, len(mine), CLUBS_PER_DOC):
            part = mine[n : n + CLUBS_PER_DOC]
            title = f"社团通知 第{n // CLUBS_PER_DOC + 1}期" if lang == "zh" else f"Club notices, part {n // CLUBS_PER_DOC + 1}"
            out.append((title, "\n\n".join(c.paragraph for c in part)))
    return out


def questions(all_clubs: list[Club], per_lang: int, seed: int = 5) -> list[Question]:
    """`per_lang` questions in each language, one fact of a club picked at random each."""
    rng = random.Random(seed)
    out = []
    for lang in ("zh", "en"):
        mine = [c for c in all_clubs if c.lang == lang]
        out += [rng.choice(rng.choice(mine).questions) for _ in range(per_lang)]
    return out


MEMORIES: list[tuple[str, Question]] = [
    ("小林对花生过敏，聚餐时不要点含花生的菜。", Question("zh", "memory", "小林能吃花生吗？", "小林对花生过敏")),
    ("阿杰的生日是十一月二十日。", Question("zh", "memory", "阿杰的生日是哪天？", "阿杰的生日是十一月二十日")),
    ("丽娜负责每月的活动经费报销。", Question("zh", "memory", "活动经费报销找谁？", "丽娜负责每月的活动经费报销")),
    ("群主希望周末不要在群里发工作消息。", Question("zh", "memory", "周末可以在群里发工作消息吗？", "周末不要在群里发工作消息")),
    ("老周的车位在地下二层B区17号。", Question("zh", "memory", "老周的车位在哪里？", "地下二层B区17号")),
    ("Dana prefers to be called Dee.", Question("en", "memory", "What does Dana like to be called?", "called Dee")),
    ("Marco is vegetarian and does not eat fish either.", Question("en", "memory", "Does Marco eat fish?",
                                                                  "Marco is vegetarian")),
    ("Priya's cat is named Biscuit.", Question("en", "memory", "What is the name of Priya's cat?", "named Biscuit")),
    ("The group's shared calendar password is kept by Helen.", Question("en", "memory",
                                                                       "Who keeps the shared calendar password?",
                                                                       "kept by Helen")),
    ("Kenji moved to Osaka in March.", Question("en", "memory", "Where did Kenji move to?", "Kenji moved to Osaka")),
]

SMALL_TALK: list[Question] = [Question(lang, "smalltalk", text, "") for lang, text in [
    ("zh", "哈哈哈笑死我了"), ("zh", "今天天气真好，出去走走吧"), ("zh", "早上好各位"), ("zh", "晚饭吃什么好呢"),
    ("zh", "这个表情包太可爱了"), ("zh", "我刚下班，好累啊"), ("zh", "周末有人一起看电影吗"), ("zh", "收到，谢谢"),
    ("zh", "明天会下雨吗"), ("zh", "这首歌真好听"),
    ("en", "good morning everyone"), ("en", "lol that is hilarious"), ("en", "anyone watching the game tonight?"),
    ("en", "thanks, got it"), ("en", "I just got home, so tired"), ("en", "what should I cook for dinner"),
    ("en", "happy friday folks"), ("en", "this song is stuck in my head"), ("en", "ok see you later"),
    ("en", "nice photo!"),
]]

_EVERYDAY_ZH_TEXT = ("天气 周末 公园 散步 超市 水果 早餐 晚饭 做饭 咖啡 朋友 家人 孩子 老师 学校 考试 假期 旅行 火车 机场 酒店 电影 "
                "音乐 足球 跑步 游泳 医院 银行 工资 房租 邻居 快递 外卖 手机 电脑 游戏 小说 新闻 城市 花园 小猫 春天 秋天 "
                "衣服 商场 打折 排队 地铁 公交 生日 蛋糕 聚会 节日 月饼 博物馆 同事 老板 报告 项目 加班 休息 阳台 海边")
_EVERYDAY_EN_TEXT = ("weather weekend park walk market fruit breakfast dinner cooking coffee friends family children teacher "
                "school exam holiday train airport hotel movie music football running swimming hospital bank salary "
                "rent neighbor package delivery phone computer game novel news city garden cat spring autumn clothes "
                "mall discount queue subway bus birthday cake party festival museum colleague boss report project "
                "overtime rest balcony beach")
_EVERYDAY_ZH = _EVERYDAY_ZH_TEXT.split()
_EVERYDAY_EN = _EVERYDAY_EN_TEXT.split()


def filler(n_passages: int, seed: int = 3) -> list[tuple[str, str]]:
    """Documents of other talk, 40 paragraphs of about 500 runes each (one passage apiece): sentences of
    everyday words with a fifth of the words taken from the clubs' own vocabulary (days, places, people,
    things to borrow, kinds of club), so that they compete with the clubs for the same terms."""
    rng = random.Random(seed)
    topical_zh = [*_ZH_DAY, *_ZH_PLACE, *_ZH_PEOPLE, *_ZH_ITEMS, *_ZH_KIND, "年费", "学生", "借用", "活动", "联系"]
    topical_en = [*_EN_DAY, *_EN_PEOPLE, *_EN_ITEMS, "membership", "dollars", "students", "borrow", "meets", "club"]
    docs = []
    for d in range(0, n_passages, 40):
        paragraphs = []
        for _ in range(min(40, n_passages - d)):
            zh = rng.random() < 0.5
            topical, everyday, sep, end = ((topical_zh, _EVERYDAY_ZH, "", "。") if zh else
                                           (topical_en, _EVERYDAY_EN, " ", ". "))
            text = ""
            while len(text) < 480:
                words = [rng.choice(topical if rng.random() < 0.2 else everyday) for _ in range(rng.randint(6, 14))]
                text += sep.join(words) + end
            paragraphs.append(text.strip())
        docs.append((f"chat notes {d // 40 + 1}", "\n\n".join(paragraphs)))
    return docs
