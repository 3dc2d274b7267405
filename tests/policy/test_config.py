import pytest

from gaca.policy.config import MODEL_PRESETS, ModelConfig


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_presets_fill_unset_sizes(name):
    config = ModelConfig(name=name)
    for field, value in MODEL_PRESETS[name].items():
        assert getattr(config, field) == value


def test_explicit_size_overrides_preset():
    assert ModelConfig(name="small", num_layers=2).num_layers == 2
    assert ModelConfig(name="small", num_layers=2).hidden_size == MODEL_PRESETS["small"]["hidden_size"]


def test_round_trip_through_dict():
    config = ModelConfig(name="small", decoding="free", history_length=0)
    assert ModelConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    "values, field",
    [
        (dict(name="huge"), "model.name"),
        (dict(decoding="beam"), "model.decoding"),
        (dict(dtype="int8"), "model.dtype"),
        (dict(device="tpu"), "model.device"),
        (dict(name="path"), "model.path"),
        (dict(name="path", path="some/dir", hidden_size=64), "model.hidden_size"),
        (dict(path="some/dir"), "model.path"),
        (dict(hidden_size=100, num_heads=3), "model.hidden_size"),
        (dict(num_heads=4, num_kv_heads=3), "model.num_kv_heads"),
        (dict(num_layers=0), "model.num_layers"),
        (dict(max_prompt_tokens=8), "model.max_prompt_tokens"),
        (dict(max_response_tokens=0), "model.max_response_tokens"),
        (dict(history_length=-1), "model.history_length"),
        (dict(history_length=True), "model.history_length"),
        (dict(show_admissible="yes"), "model.show_admissible"),
    ],
)
def test_bad_values_name_the_field(values, field):
    with pytest.raises(ValueError, match=field):
        ModelConfig(**values)


def test_unknown_keys_are_listed():
    with pytest.raises(ValueError, match="hidden"):
        ModelConfig.from_dict({"hidden": 3})
