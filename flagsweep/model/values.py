"""The kinds of values the files hold, and the object every model of them is.

What the models pin down is the kind of every value the report, compare, merge, pick and
suite compute with: a number or null, or a pair of numbers (an interval) or null.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator, StrictBool, StrictStr, WithJsonSchema
from pydantic_core import PydanticCustomError


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _number(value: Any) -> Any:
    if value is None or _is_number(value):
        return value
    raise PydanticCustomError("expected", "a number or null")


def _pair(value: Any) -> Any:
    if value is None or (isinstance(value, list) and len(value) == 2
                         and all(map(_is_number, value))):
        return value
    raise PydanticCustomError("expected", "a pair of numbers or null")


# Null passes: a number that does not exist (no samples, too few pairs) is null.
Num = Annotated[Any, PlainValidator(_number), WithJsonSchema({"type": ["number", "null"]})]
Pair = Annotated[Any, PlainValidator(_pair), WithJsonSchema({
    "type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2})]
Str = StrictStr
Bool = StrictBool


class Record(BaseModel):
    """An object of the files: its keys typed, and no other key. A writer that sets a key the
    model does not declare fails where it sets it, so `flagsweep schema` names every key a
    file holds (a results.json written under an older schema is upgraded before it is read,
    flagsweep.model.schema). Read it by attribute (`doc.machine.cpu_model`)."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self) -> dict:
        """The object as JSON: the keys it was given (explicit nulls kept), by their names."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
