"""Relations by rule: templated statements of the user's life turned into entity links, no model.

"My sister is Bea", "Bea moved to Porto", "我的上司是王总", "王总的女儿叫小雨", "小雨住在杭州":
each sentence the owner says is read as <subject phrase> <verb> <object>. A subject phrase is a
path of roles from a name or from the user ("my sister's dog", "我上司的女儿"); "is / 是 / 叫"
names the path's last role, a move, a home or a workplace links the entity the whole path
resolves to. A path is resolved through the links already known (the store's, passed in) and
the ones the same messages stated before it; a path nothing resolves is left out (a note says
which). Questions are not statements and are skipped. The model path (nodes/extract.py's
structured output) is for everything these templates do not cover; this is the floor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memlane.store.records import Message
from memlane.store.relations import (
    USER_ENTITY_ALIASES,
    USER_ENTITY_NAME,
    EntityType,
    RelationStatement,
    normalized_name,
)

# a role's words in either language → one predicate, so a question in one language finds a link
# said in the other; a role not here is its own predicate ("best friend" → best_friend, 师父 → 师父)
ROLE_PREDICATES = {
    "上司": "boss", "老板": "boss", "领导": "boss", "manager": "boss",
    "女儿": "daughter", "儿子": "son", "孩子": "child", "kid": "child",
    "姐姐": "sister", "妹妹": "sister", "哥哥": "brother", "弟弟": "brother",
    "妈妈": "mother", "母亲": "mother", "mom": "mother", "mum": "mother",
    "爸爸": "father", "父亲": "father", "dad": "father",
    "妻子": "wife", "老婆": "wife", "丈夫": "husband", "老公": "husband",
    "朋友": "friend", "同事": "colleague", "室友": "roommate", "邻居": "neighbour", "neighbor": "neighbour",
    "狗": "dog", "小狗": "dog", "猫": "cat", "小猫": "cat", "宠物": "pet",
}  # fmt: skip
# links a newer one ends: one boss, one spouse, one home, one workplace at a time; a second
# sister or daughter is another person, not a change
SINGLE_VALUED = frozenset({"boss", "wife", "husband", "partner", "mother", "father", "lives_in", "works_at"})
PET_ROLES = frozenset({"dog", "cat", "pet", "puppy", "kitten", "parrot", "hamster", "rabbit", "horse", "fish"})

_SENTENCE = re.compile(r"[^.!?;,\n。！？；，]++[.!?;,\n。！？；，]?")
_NAME = r"[A-Z][\w'-]*+(?: [A-Z][\w'-]*+){0,3}"
_ENGLISH = re.compile(
    r"(?P<subject>[A-Za-z][\w' -]{0,60}?) (?:(?P<naming>is called|is named|is)|(?P<home>(?:has |had |just |recently )?"
    r"(?:moved|relocated) to|(?:now |still )?(?:lives|lived|is living) in)|(?P<work>(?:now |still )?works (?:at|for))) "
    r"(?P<object>" + _NAME + ")"
)
_CHINESE = re.compile(
    r"(?P<subject>[^\s的]{1,10}?(?:的[^\s的]{1,6}?){0,3})(?:现在|已经|刚|也|还)?"
    r"(?:(?P<naming>叫做|名叫|叫|是)|(?P<home>住在|搬到了|搬到|搬去了|搬去|搬家到)|在(?P<work_object>[^\s]{1,16}?)(?:工作|上班))"
    r"(?P<object>[^\s]{0,16})"
)
# a clause's opening joiner ("..., and I moved to Porto", "后来小雨搬到了上海") is not its subject
_JOINER = re.compile(r"(?:(?:and then|and|but|so|then|also|later) |后来|然后|而且|不过|但是)", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]")
_USER_NAMES = frozenset({USER_ENTITY_NAME, *USER_ENTITY_ALIASES})

# A role and the name it has, said in passing: "my sister Bea", "my best friend Tom", "我姐姐贝亚",
# "我的上司王总". The English role is one or two lowercase words that are not the templates' own
# verbs and joiners ("my sister is Bea" is a statement, read above); the Chinese name ends where
# a verb the templates read, 的, a conjunction or punctuation begins.
_NOT_ROLE_WORDS = frozenset(
    {"is", "was", "are", "called", "named", "moved", "lives", "lived", "works", "worked"}
    | {"to", "in", "at", "for", "and", "with", "of", "from", "the", "a", "an"}
)
_EN_APPOSITION = re.compile(r"\b[Mm]y (?P<role>[a-z]++(?: [a-z]++)?) (?P<name>" + _NAME + ")")
_ZH_ROLES = "|".join(sorted((word for word in ROLE_PREDICATES if _CJK.search(word)), key=len, reverse=True))
_ZH_NAME_END = r"住搬在是叫的和与跟也很都就还刚已今昨明去来说要想会给对被把，。、！？；（(\s"
_ZH_APPOSITION = re.compile(
    r"我的?(?P<role>" + _ZH_ROLES + r")(?P<name>[^\W\d_是叫在住搬的和与跟也]{1,4}?)(?=[" + _ZH_NAME_END + r"]|$)"
)
# Another name in brackets, in the other script: "Bea (贝亚)", "贝亚（Bea）" (in the same script a
# bracket more often says what a thing is: "Porto (Portugal)", "my car (a Ford)")
_BRACKETED = re.compile(r"(?P<before>[^\s(（]{1,40}?)\s?[(（]\s?(?P<inside>[^()（）]{1,40}?)\s?[)）]")
_ZH_BOUNDARY = "的是叫和与跟，、"  # a Chinese name before a bracket begins after the last of these


@dataclass
class Extracted:
    """What the rules read in some messages: the statements, the other names an entity is given
    ("Bea (贝亚)": Bea, also 贝亚), what they could not resolve, and the ids of the messages they
    read nothing in."""

    statements: list[RelationStatement] = field(default_factory=list)
    aliases: list[tuple[str, list[str]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


def role_predicate(role: str) -> str:
    """The predicate a role's words name ("Best friend" → best_friend, 上司 → boss)."""
    words = "_".join(role.strip().lower().split())
    return ROLE_PREDICATES.get(words, words)


def _is_role(words: str) -> bool:
    return not _NOT_ROLE_WORDS.intersection(words.split())


def appositions(text: str) -> list[tuple[str, str]]:
    """(predicate, name) for each role of the user's said with its name: "my sister Bea" →
    ("sister", "Bea"), "我姐姐贝亚" → ("sister", "贝亚")."""
    found = [
        (role_predicate(match.group("role")), match.group("name").removesuffix("'s"))
        for match in _EN_APPOSITION.finditer(text)
        if _is_role(match.group("role"))
    ]
    found += [(role_predicate(match.group("role")), match.group("name")) for match in _ZH_APPOSITION.finditer(text)]
    return list(dict.fromkeys(found))  # said twice in one message: one link


def _bracket_name(text: str) -> str:
    """The name a text before or inside brackets gives: "my sister Bea" → Bea, 我姐姐贝亚 → 贝亚."""
    text = text.strip(" ,.;:，。；：")
    if named := _ZH_APPOSITION.search(text + "，"):
        return named.group("name")
    if _CJK.search(text):
        return text[max(text.rfind(char) for char in _ZH_BOUNDARY) + 1 :]
    capitalized = re.findall(_NAME, text)
    return capitalized[-1] if capitalized and text.endswith(capitalized[-1]) else ""  # "my sister (贝亚)": no name


def bracketed_aliases(text: str) -> list[tuple[str, list[str]]]:
    """(name, [other name]) for each name followed by another in brackets: "Bea (贝亚)"."""
    found = []
    for match in _BRACKETED.finditer(text):
        name, other = _bracket_name(match.group("before")), _bracket_name(match.group("inside"))
        if name and other and bool(_CJK.search(name)) != bool(_CJK.search(other)) and not other.isdigit():
            if normalized_name(name) not in _USER_NAMES and normalized_name(other) not in _USER_NAMES:
                found.append((name, [other]))
    return found


def _object_type(predicate: str) -> EntityType:
    if predicate == "lives_in":
        return "place"
    if predicate == "works_at":
        return "organisation"
    return "pet" if predicate in PET_ROLES else "person"


def _english_path(subject: str) -> list[str] | None:
    """["user", "sister", "dog"] for "my sister's dog", ["Bea", "dog"] for "Bea's dog", None for no path."""
    parts = [part.strip() for part in subject.split("'s ")]
    head = parts[0]
    named = _EN_APPOSITION.fullmatch(head)
    if head.lower() == "i":
        path = [USER_ENTITY_NAME]
    elif named is not None and _is_role(named.group("role")):  # "my sister Bea": Bea
        path = [named.group("name")]
    elif head.lower().startswith("my ") and len(head.split()) in (2, 3):
        path = [USER_ENTITY_NAME, role_predicate(head[3:])]
    elif re.fullmatch(_NAME, head):
        path = [head]
    else:
        return None
    for role in parts[1:]:
        if not role or not role.replace(" ", "").isalpha() or role != role.lower() or len(role.split()) > 2:
            return None
        path.append(role_predicate(role))
    return path


def _chinese_path(subject: str) -> list[str] | None:
    """["user", "boss", "daughter"] for 我上司的女儿, ["王总", "daughter"] for 王总的女儿."""
    head, *roles = subject.split("的")
    named = _ZH_APPOSITION.fullmatch(subject.split("的")[0] if not subject.startswith("我的") else subject)
    if named is not None:  # 我姐姐贝亚 / 我的上司王总: the name
        head, roles = named.group("name"), []
    if head == "我":
        path = [USER_ENTITY_NAME]
    elif head.startswith("我") and head[1:] in ROLE_PREDICATES:
        path = [USER_ENTITY_NAME, role_predicate(head[1:])]
    elif head and _CJK.search(head) or head.isalpha():
        path = [head]
    else:
        return None
    if any(not role for role in roles):
        return None
    return path + [role_predicate(role) for role in roles]


class _Links:
    """The known links (subject name, predicate) → object name, the newest winning."""

    def __init__(self, known: Mapping[tuple[str, str], str] | None) -> None:
        self.links = {
            (normalized_name(subject), predicate): name for (subject, predicate), name in (known or {}).items()
        }

    def resolve(self, path: list[str]) -> str | None:
        name = path[0]
        for predicate in path[1:]:
            key = (USER_ENTITY_NAME if normalized_name(name) in _USER_NAMES else normalized_name(name), predicate)
            found = self.links.get(key)
            if found is None:
                return None
            name = found
        return name

    def add(self, statement: RelationStatement) -> None:
        subject = normalized_name(statement.subject)
        self.links[(USER_ENTITY_NAME if subject in _USER_NAMES else subject, statement.predicate)] = statement.object


def _statement(
    path: list[str], kind: str, target: str, links: _Links, *, said_at: float, sources: list[str], notes: list[str]
) -> RelationStatement | None:
    if kind == "naming":
        if len(path) < 2:  # "Bea is Tom" / 我是老师: no role named
            return None
        owner_path, predicate = path[:-1], path[-1]
    else:
        owner_path, predicate = path, "lives_in" if kind == "home" else "works_at"
    subject = links.resolve(owner_path)
    if subject is None:
        notes.append(f"left out '{target}': nothing known yet names {' → '.join(owner_path)}")
        return None
    statement = RelationStatement(
        subject=subject,
        predicate=predicate,
        object=target,
        subject_type="person",
        object_type=_object_type(predicate),
        valid_from=said_at,
        source_message_ids=sources,
        exclusive=predicate in SINGLE_VALUED,
    )
    links.add(statement)
    return statement


def statements_in(
    text: str,
    *,
    said_at: float,
    source_ids: Sequence[str] = (),
    known: Mapping[tuple[str, str], str] | None = None,
    _links: _Links | None = None,
) -> Extracted:
    """The links `text` (said by the user at `said_at`) states, in order.

    known: links already stored, (subject name, predicate) → object name ("user", "sister") → "Bea"."""
    links = _links if _links is not None else _Links(known)
    found = Extracted(aliases=bracketed_aliases(text))
    for predicate, name in appositions(text):  # "my sister Bea": the user's sister is Bea
        statement = _statement(
            [USER_ENTITY_NAME, predicate], "naming", name, links, said_at=said_at, sources=list(source_ids), notes=[]
        )
        if statement is not None and normalized_name(name) not in _USER_NAMES:
            found.statements.append(statement)
    for match in _SENTENCE.finditer(_BRACKETED.sub(r"\g<before>", text)):  # the templates read past "(贝亚)"
        sentence = match.group().strip()
        if sentence.endswith(("?", "？")):
            continue
        sentence = sentence.rstrip(".!;,\n。！；，").strip()
        if joiner := _JOINER.match(sentence):
            sentence = sentence[joiner.end() :]
        for reading in _readings(sentence):
            if reading is None:
                continue
            path, kind, target = reading
            statement = _statement(
                path, kind, target, links, said_at=said_at, sources=list(source_ids), notes=found.notes
            )
            if statement is not None:
                found.statements.append(statement)
            break
    return found


def _readings(sentence: str) -> list[tuple[list[str], str, str] | None]:
    if _CJK.search(sentence):
        chinese = _CHINESE.fullmatch(sentence)
        if chinese is None:
            return []
        kind = next(name for name in ("naming", "home", "work_object") if chinese.group(name) is not None)
        target = (chinese.group("work_object") if kind == "work_object" else chinese.group("object")).rstrip("了啦呢吧")
        path = _chinese_path(chinese.group("subject"))
        if not target or path is None or (kind == "work_object" and chinese.group("object")):
            return []
        return [(path, "work" if kind == "work_object" else kind, target)]
    sentence = sentence.replace("'s name is ", " is called ")
    english = _ENGLISH.match(sentence)
    if english is None:
        return []
    kind = next(name for name in ("naming", "home", "work") if english.group(name) is not None)
    path = _english_path(english.group("subject"))
    return [] if path is None else [(path, kind, english.group("object"))]


def statements_from_messages(
    messages: Sequence[Message], *, known: Mapping[tuple[str, str], str] | None = None
) -> Extracted:
    """The links the owner's messages state, oldest first, each from its message and at its time
    (what one message names, a later one can follow: "My sister is Bea." then "My sister moved to Porto")."""
    links = _Links(known)
    found = Extracted()
    for message in sorted(messages, key=lambda message: (message.created_at, message.seq or 0)):
        if message.role != "user" or message.speaker_is_owner is False:
            continue
        read = statements_in(message.content, said_at=message.created_at, source_ids=[message.id], _links=links)
        found.statements += read.statements
        found.aliases += read.aliases
        found.notes += read.notes
        if not read.statements and not read.aliases:
            found.unread.append(message.id)
    return found
