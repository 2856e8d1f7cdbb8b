"""Which grounding features a flattened LIGHT context shows: ParlAI's options and named sets.

ParlAI's ``light_dialog`` builder is driven by ``light_use_*`` options (docs/light_data.md §4). A
:class:`Features` value holds exactly those that shape the text, with ParlAI's
``DefaultTeacher`` defaults, and keeps ParlAI's matching rule so the same option values give
the same text: a field set to ``all`` (or any value containing ``all``) or equal to the asked
role is on. One upstream quirk is kept on purpose: ``persona="partner"`` shows *no* persona,
because the builder tests for the word ``other``; use ``persona="other"`` for the partner's.

Named sets cover ParlAI's three teachers and the grounding ablations of the paper's
Tables 5 and 6. The paper does not spell out the flags behind each row (docs/light_data.md §4: "not stated
in the code"); our mapping is documented in :data:`FEATURE_SETS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

ROLE_CHOICES = ("partner", "self", "all", "none")
PERSONA_CHOICES = ("partner", "self", "all", "none", "other")
CURRENT_SELF_CHOICES = ("none", "all", "all_filtered", "all_filtered_remove")
REPEAT_CHOICES = ("none", "self_last", "partner_last", "both_last")


def uses(value: str, role: str) -> bool:
    """ParlAI's feature test: on when ``value`` contains ``all`` or equals ``role``."""
    return "all" in value or value == role


@dataclass(frozen=True)
class Features:
    """Text options of the builder; defaults are ParlAI's ``DefaultTeacher`` (docs/light_data.md §4).

    ``taskname``: ``_task_<label type>`` line. ``setting``: ``_setting_name``/``_setting_desc``.
    ``person_names``: ``_partner_name``/``_self_name``. ``persona``: ``_self_persona`` (self)
    and/or ``_other_persona`` (other). ``objects``: ``_object_desc`` lines.
    ``speech``/``action``/``emote``: whose past utterances, actions and emotes are shown.
    ``current_self_output``: the agent's other outputs of the labelled turn (``all``), none, or
    the ``all_filtered`` variants that skip examples without any. ``repeat``: baseline modes
    replacing the text by the last utterance(s). ``speech_prefix``: ``_partner_say``/
    ``_self_say`` before utterances. ``speech_gates_current_say``: the 2019 builder also
    required ``speech`` to include ``self`` before showing the current ``_self_say``; HEAD
    dropped that. Off by default (HEAD); the paper ablations turn it on, since the paper ran
    the 2019 code and a set without dialogue must not show the agent's own words.
    """

    taskname: bool = True
    setting: bool = True
    person_names: bool = True
    persona: str = "self"
    objects: bool = True
    speech: str = "all"
    action: str = "all"
    emote: str = "all"
    current_self_output: str = "all"
    repeat: str = "none"
    speech_prefix: bool = True
    speech_gates_current_say: bool = False

    def __post_init__(self) -> None:
        for name in ("speech", "action", "emote"):
            _check_choice(name, getattr(self, name), ROLE_CHOICES)
        _check_choice("persona", self.persona, PERSONA_CHOICES)
        _check_choice("current_self_output", self.current_self_output, CURRENT_SELF_CHOICES)
        _check_choice("repeat", self.repeat, REPEAT_CHOICES)

    def with_options(self, **changes) -> "Features":
        """A copy with some options changed (validated)."""
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"feature {name!r} must be one of {choices}, got {value!r}")


PARLAI_DEFAULT = Features()

_NOTHING = Features(
    setting=False, person_names=False, persona="none", objects=False,
    speech="none", action="none", emote="none", speech_gates_current_say=True,
)
"""Base of the paper ablations: only the task token; each set switches features on."""

_DIALOGUE = replace(_NOTHING, speech="all")

FEATURE_SETS: dict[str, Features] = {
    # ParlAI's teachers (docs/light_data.md §4 table), text options only.
    "parlai_default": PARLAI_DEFAULT,
    "parlai_simple": Features(objects=False, emote="none", speech="partner", action="none",
                              current_self_output="none", speech_prefix=False),
    "parlai_simple_multi": Features(taskname=False, objects=False, emote="none", speech="partner",
                                    action="none", current_self_output="all", speech_prefix=False),
    # Paper ablations (Tables 5 and 6). Past speech/actions/emotes of both agents when on;
    # names go with the persona (a character is a name plus a persona); the task token stays.
    "actions_emotes": replace(_NOTHING, action="all", emote="all"),
    "dialogue": _DIALOGUE,
    "dialogue_action_emote": replace(_DIALOGUE, action="all", emote="all"),
    "dialogue_persona": replace(_DIALOGUE, persona="self", person_names=True),
    "dialogue_setting": replace(_DIALOGUE, setting=True),
    "dialogue_objects": replace(_DIALOGUE, objects=True),
    # Everything a player saw: setting, names, own persona, objects, all speech, actions and
    # emotes. Identical to ParlAI's default text; named separately for the ablation tables.
    "all": PARLAI_DEFAULT,
    # Leave-one-out ablations of the default text: what each grounding source is worth.
    "no_persona": replace(PARLAI_DEFAULT, persona="none"),
    "no_setting": replace(PARLAI_DEFAULT, setting=False),
    "no_objects": replace(PARLAI_DEFAULT, objects=False),
    "no_names": replace(PARLAI_DEFAULT, person_names=False),
    "no_actions_emotes": replace(PARLAI_DEFAULT, action="none", emote="none"),
}


def get_features(name_or_features: str | Features | None = None) -> Features:
    """A named feature set (see :data:`FEATURE_SETS`), a :class:`Features` as is, or the default."""
    if name_or_features is None:
        return PARLAI_DEFAULT
    if isinstance(name_or_features, Features):
        return name_or_features
    try:
        return FEATURE_SETS[name_or_features]
    except KeyError:
        raise ValueError(
            f"unknown LIGHT feature set {name_or_features!r}; choose one of {sorted(FEATURE_SETS)}"
        ) from None
