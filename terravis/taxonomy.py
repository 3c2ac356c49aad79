"""The 18 TerraVis violation types as data: what each checks and the visual question asked.

The questions describe concrete visual conditions and never name the type: asking a judge
whether a named category is present works worse than asking what to look for (paper,
Appendix B). A prompt pack may replace any question (see `terravis.pack`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["object", "interaction", "scene"]
#: The taxonomy's three levels, in the order its checks are listed.
LEVELS: tuple[Level, ...] = ("object", "interaction", "scene")


@dataclass(frozen=True)
class ViolationType:
    """One check of the taxonomy: a stable id, its level, its display name, what it covers,
    and the default question put to the judge.

    Examples:
        >>> support = get_type("support_stability")
        >>> support.level, support.name
        ('interaction', 'Support and stability')
        >>> sorted(support.to_json())
        ['checks', 'id', 'level', 'name', 'question']
    """

    id: str
    level: Level
    name: str
    checks: str
    question: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "level": self.level, "name": self.name, "checks": self.checks,
                "question": self.question}


#: The 18 violation types: object level, then interaction, then scene.
TAXONOMY: tuple[ViolationType, ...] = (
    # -- object level ---------------------------------------------------------------------
    ViolationType(
        "object_identity", "object", "Object identity",
        "Entities whose identity cannot exist (living dragons, impossible hybrids); depictions "
        "on murals, screens and prints are ignored.",
        "Is any creature, person or thing shown as physically present in the scene something "
        "that cannot exist in reality, such as a living mythical animal or a blend of two "
        "different animals or objects? Ignore anything that is only a picture, mural, screen "
        "image, statue or print."),
    ViolationType(
        "structural_distortion", "object", "Structural distortion",
        "Objects that are melted, broken or warped beyond what their material allows.",
        "Does any object or body look melted, bent, fused, torn apart or warped in a way its "
        "real material and shape would not allow?"),
    ViolationType(
        "biological_anatomy", "object", "Biological anatomy",
        "Impossible bodies: limbs, finger counts, eye directions.",
        "Does any person or animal have a body that is impossible: extra, missing or merged "
        "limbs, a wrong number of fingers or toes, joints bending the wrong way, or eyes "
        "looking in inconsistent directions?"),
    ViolationType(
        "non_biological_structure", "object", "Non-biological structure",
        "Man-made objects with disconnected or misplaced parts, or geometry that disagrees "
        "with the viewpoint.",
        "Does any man-made object have parts that are detached, duplicated, misplaced or "
        "missing (for example a wheel not attached to its vehicle, chair legs in impossible "
        "places), or a shape that does not agree with the camera angle?"),
    ViolationType(
        "texture_surface", "object", "Texture/surface",
        "Implausible materials, such as skin that looks like stone or wood.",
        "Does any surface show a material it could not have, for example skin that looks like "
        "stone, wood or plastic, fur that looks like liquid, or glass that looks like cloth?"),
    ViolationType(
        "symbolic_content", "object", "Symbolic content",
        "Broken, distorted or unreadable text, signs and logos.",
        "Is any visible writing, sign, label, number or logo garbled, misspelled, distorted "
        "or unreadable where a real one would be clear?"),
    ViolationType(
        "object_context", "object", "Object-context",
        "Objects that do not belong in their scene (a dog working in an office).",
        "Is any object, person or animal in a place or role where it would not plausibly be "
        "in reality, for example a dog typing at an office desk or a bathtub in the middle of "
        "a highway?"),
    # -- interaction level ----------------------------------------------------------------
    ViolationType(
        "contact_state", "interaction", "Contact state",
        "Objects passing through one another.",
        "Do any two objects or body parts pass through, sink into or merge with each other "
        "where they should only touch?"),
    ViolationType(
        "support_stability", "interaction", "Support and stability",
        "Things floating or resting without support, or balanced impossibly.",
        "Is anything hanging in the air with nothing holding it, resting on nothing, or "
        "balanced in a way that could not stay put under gravity?"),
    ViolationType(
        "dynamic_response", "interaction", "Dynamic response",
        "A missing reaction to force or motion (no splash, no deformation).",
        "Where something moves fast, falls, hits, presses or pulls, is the expected reaction "
        "missing, for example no splash where something enters water, no bending or dent "
        "under heavy weight, no debris where something crashes?"),
    ViolationType(
        "medium_interaction", "interaction", "Medium interaction",
        "Wrong buoyancy, immersion, wake or air resistance.",
        "Does anything behave wrongly in water, air or another medium: floating or sinking "
        "when it should not, a moving boat without a wake, or hair, cloth or smoke moving "
        "against the wind or the motion?"),
    ViolationType(
        "optical_effect", "interaction", "Optical effect",
        "Implausible shadows, reflections and refraction.",
        "Are there shadows, reflections or see-through distortions that do not match the "
        "objects and lights in the scene, such as missing shadows, shadows pointing the wrong "
        "way, or a mirror or water surface showing something that is not there?"),
    ViolationType(
        "energy_source", "interaction", "Energy source",
        "Light, glow or heat with no plausible origin.",
        "Is there light, glow, fire or heat in the image with nothing that could plausibly "
        "produce it, or a lamp or flame that does not light up its surroundings?"),
    ViolationType(
        "thermal_response", "interaction", "Thermal response",
        "Missing or wrong melting, burning, steam or condensation.",
        "Where there is fire, heat or cold, is the expected effect missing or wrong: ice or "
        "snow staying solid beside flames, nothing scorched by fire, no steam from a boiling "
        "pot, or frost where it could not form?"),
    ViolationType(
        "behavior_event", "interaction", "Behavior-event",
        "Behaviour that contradicts the depicted event.",
        "Does any person or animal act in a way that contradicts what is happening, for "
        "example smiling calmly while falling, players looking away from the ball during "
        "play, or a crowd facing away from the stage it is watching?"),
    # -- scene level ------------------------------------------------------------------------
    ViolationType(
        "relative_scale", "scene", "Relative scale",
        "Unrealistic sizes of things relative to each other.",
        "Are any objects, people or animals the wrong size compared with each other or with "
        "their surroundings, for example a cat as large as a car or a door too small for the "
        "people using it?"),
    ViolationType(
        "depth_order_occlusion", "scene", "Depth-order/occlusion",
        "Impossible overlap order; parts missing or duplicated where things overlap.",
        "Where things overlap, is the front-to-back order impossible, or are parts missing, "
        "doubled or wrongly cut off where one thing passes behind another?"),
    ViolationType(
        "region_continuity", "scene", "Region continuity",
        "Seams and lighting or perspective breaks between regions.",
        "Are there visible seams or breaks between parts of the image, such as a horizon, "
        "floor, wall or road that does not line up, or lighting or perspective that changes "
        "abruptly from one area to the next?"),
)

#: The ids of the 18 types, in TAXONOMY's order (the order of a record's checks).
TYPE_IDS: tuple[str, ...] = tuple(t.id for t in TAXONOMY)
_BY_ID = {t.id: t for t in TAXONOMY}


def get_type(type_id: str) -> ViolationType:
    """The type with this id; a clear error naming the valid ids otherwise.

    Examples:
        >>> get_type("relative_scale").level
        'scene'
        >>> get_type("gravity")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        KeyError: "unknown TerraVis violation type 'gravity'; valid ids: [...]"
    """
    try:
        return _BY_ID[type_id]
    except KeyError:
        raise KeyError(f"unknown TerraVis violation type {type_id!r}; valid ids: {list(TYPE_IDS)}") from None


def types_at(level: str) -> tuple[ViolationType, ...]:
    """The types of one level, in taxonomy order.

    Examples:
        The 18 types: 7 of objects, 8 of interactions, 3 of the scene:

        >>> [len(types_at(level)) for level in LEVELS]
        [7, 8, 3]
        >>> [t.id for t in types_at("scene")]
        ['relative_scale', 'depth_order_occlusion', 'region_continuity']
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose from {LEVELS}")
    return tuple(t for t in TAXONOMY if t.level == level)
