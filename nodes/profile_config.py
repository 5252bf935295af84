"""Which profile slots exist, and the rules the memory graph keeps for them.

A slot is (topic, subtopic). Descriptions are shown to the model in summarize, extract
and merge; they are bilingual so Chinese and English chats map to the same slots.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlane.store.ids import normalize_slot

# the topic that keeps facts about other people, one subtopic per person (see nodes/extract.py)
PEOPLE_TOPIC = "people"
# the topic that keeps decisions, one subtopic per subject: a newer decision on it supersedes the older (merge)
DECISIONS_TOPIC = "decisions"


class SubtopicConfig(BaseModel):
    """One slot inside a topic."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    name: str = Field(min_length=1)
    description: str = ""
    validate_merge: bool | None = Field(
        default=None,
        description="ask the model before adding to an empty slot; None inherits the topic's",
    )


class TopicConfig(BaseModel):
    """A topic and its known subtopics."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    name: str = Field(min_length=1)
    description: str = ""
    subtopics: list[SubtopicConfig] = Field(default_factory=list)
    validate_merge: bool = Field(default=True, description="ask the model before adding to an empty slot of this topic")
    open_subtopics: bool = Field(
        default=False,
        description="any subtopic name is a slot of this topic, in strict mode too (people: one per person)",
    )


PROMPT_ADDITION_MAX_CHARS = 4000


class StepPrompts(BaseModel):
    """A deployment's own instructions for the memory graph's steps (mem0's custom extraction
    prompt, a project's profile rules): added to the step's prompt after memlane's rules, so the
    answer's format, and its parsing, stay memlane's."""

    model_config = ConfigDict(extra="forbid")

    summarize: str = Field(
        default="", max_length=PROMPT_ADDITION_MAX_CHARS, description="added to the event summary's prompt"
    )
    extract: str = Field(
        default="", max_length=PROMPT_ADDITION_MAX_CHARS, description="added to the fact extraction's prompt"
    )


class ProfileConfig(BaseModel):
    """Topics and subtopics with descriptions, and the limits the graph enforces."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    topics: list[TopicConfig] = Field(default_factory=list)
    prompts: StepPrompts = Field(default_factory=StepPrompts)
    strict: bool = Field(default=False, description="drop facts outside the configured slots")
    max_subtopics_per_topic: int = Field(default=8, ge=1, description="organize a topic above this")
    max_tokens_per_entry: int = Field(default=120, ge=8, description="re-summarize an entry above this")
    validate_all: bool = Field(
        default=False,
        description="ask the model before adding to an empty slot of every topic, whatever its validate_merge says "
        "(Memobase's validate mode); per tenant or persona in their sections, for all runs MEMLANE_MEMORY_VALIDATE_ALL",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> ProfileConfig:
        seen: set[str] = set()
        for topic in self.topics:
            key = normalize_slot(topic.name)
            if key in seen:
                raise ValueError(f"topic {topic.name!r} is configured twice; merge the two entries")
            seen.add(key)
        return self

    def find_topic(self, topic: str) -> TopicConfig | None:
        key = normalize_slot(topic)
        return next((item for item in self.topics if normalize_slot(item.name) == key), None)

    def find_subtopic(self, topic: str, subtopic: str) -> SubtopicConfig | None:
        found = self.find_topic(topic)
        if found is None:
            return None
        key = normalize_slot(subtopic)
        return next((item for item in found.subtopics if normalize_slot(item.name) == key), None)

    def allows(self, topic: str, subtopic: str) -> bool:
        """Whether a fact for this slot may be kept (always, unless strict)."""
        if not self.strict or self.find_subtopic(topic, subtopic) is not None:
            return True
        found = self.find_topic(topic)
        return found is not None and found.open_subtopics

    def needs_validation(self, topic: str, subtopic: str) -> bool:
        """Whether adding to an empty slot asks the model first (always with `validate_all`)."""
        found_topic = self.find_topic(topic)
        if self.validate_all:
            return True
        if found_topic is None:
            return True
        found = self.find_subtopic(topic, subtopic)
        if found is not None and found.validate_merge is not None:
            return found.validate_merge
        return found_topic.validate_merge

    def prompt(self, step: str, base: str) -> str:
        """`base`, the step's prompt, with this configuration's instructions for it (`prompts`)."""
        added = getattr(self.prompts, step).strip()
        if not added:
            return base
        return f"{base}\n\nTHE DEPLOYMENT'S RULES (follow them; the answer format above still holds):\n{added}"

    def describe(self) -> str:
        """The slots as prompt text: one line per topic, indented subtopics."""
        if not self.topics:
            return "(no configured topics: choose short, general topic and subtopic names)"
        lines: list[str] = []
        for topic in self.topics:
            lines.append(f"- {topic.name}: {topic.description}".rstrip(": "))
            for subtopic in topic.subtopics:
                lines.append(f"  - {subtopic.name}: {subtopic.description}".rstrip(": "))
        if self.strict:
            open_topics = [topic.name for topic in self.topics if topic.open_subtopics]
            lines.append(
                "Only these topic/subtopic pairs are allowed"
                + (f", and any subtopic of {', '.join(open_topics)}." if open_topics else ".")
            )
        else:
            lines.append("Prefer these names; add a new subtopic only when none fits.")
        return "\n".join(lines)


def _topic(
    name: str,
    description: str,
    *subtopics: tuple[str, str],
    validate_merge: bool = True,
    open_subtopics: bool = False,
) -> TopicConfig:
    return TopicConfig(
        name=name,
        description=description,
        subtopics=[SubtopicConfig(name=sub, description=text) for sub, text in subtopics],
        validate_merge=validate_merge,
        open_subtopics=open_subtopics,
    )


def default_profile_config() -> ProfileConfig:
    """What people tell assistants, described in English and Chinese."""
    return ProfileConfig(
        topics=[
            _topic(
                "basic_info",
                "who the user is / 基本信息",
                ("name", "name or nickname / 姓名或昵称"),
                ("age", "age or birth year / 年龄"),
                ("location", "city or country they live in / 所在城市"),
                ("language", "languages they speak / 使用的语言"),
                validate_merge=False,
            ),
            _topic(
                "work",
                "job and studies / 工作与学习",
                ("occupation", "job title or field / 职业"),
                ("company", "employer or school / 公司或学校"),
                ("workload", "working hours, overtime, pressure / 工作量、加班、压力"),
                ("skills", "skills and tools they use / 技能"),
            ),
            _topic(
                "interests",
                "hobbies and tastes / 兴趣爱好",
                ("hobbies", "activities they enjoy / 爱好"),
                ("media", "books, films, music, games / 书影音游戏"),
                ("sports", "sports they play or follow / 运动"),
            ),
            _topic(
                "lifestyle",
                "daily life and habits / 生活方式",
                ("sleep_schedule", "when and how well they sleep / 作息与睡眠"),
                ("diet", "food and drink preferences / 饮食偏好"),
                ("routine", "daily routine and habits / 日常习惯"),
            ),
            _topic(
                "health",
                "health the user chose to share / 健康状况",
                ("conditions", "illnesses, allergies / 疾病与过敏"),
                ("energy", "tiredness, stress, mood / 精力、压力、情绪"),
                ("exercise", "how they keep fit / 锻炼"),
            ),
            _topic(
                "relationships",
                "the user's relationships / 用户的人际关系",
                ("family", "family members / 家人"),
                ("friends", "friends and colleagues / 朋友与同事"),
                ("partner", "partner / 伴侣"),
            ),
            # facts about someone else (a friend's favourite film) are theirs, never the user's;
            # added without asking the merge model, whose prompt is about the user's own profile
            _topic(
                PEOPLE_TOPIC,
                "facts about other people in the user's life, one subtopic per person, named as the chat "
                "names them / 用户身边其他人的事，每人一个子话题，用聊天里的称呼命名",
                validate_merge=False,
                open_subtopics=True,
            ),
            # what was decided, by whom; said when (valid_from); superseded by a newer one on the same
            # subject (its past value keeps valid_until). The first on a subject needs no merge call
            _topic(
                DECISIONS_TOPIC,
                "decisions the user or the people with them made, one subtopic per subject (launch, venue); "
                "the content says what was decided and by whom / "
                "做出的决定，每个议题一个子话题，内容写明决定了什么、由谁决定",
                validate_merge=False,
                open_subtopics=True,
            ),
            _topic(
                "goals",
                "what the user wants to achieve / 目标",
                ("short_term", "plans for the coming weeks / 近期计划"),
                ("long_term", "longer ambitions / 长期目标"),
            ),
            _topic(
                "assistant_preferences",
                "how the user wants the assistant to behave / 对助手的偏好",
                ("tone", "tone and formality / 语气"),
                ("format", "length and format of answers / 回答格式"),
                ("language", "language to answer in / 回答语言"),
            ),
        ]
    )
