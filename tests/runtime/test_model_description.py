"""One description of what a load chose (runtime/model_description.py): its fields from the
runtime as loaded, the resident bytes counting each storage once, and its one line."""
import dataclasses

from inkling.runtime.model_description import ModelDescription, describe, resident_bytes

FORCED = ("none", "forced", "completion.draft is none")


def test_the_description_says_what_the_load_chose(tiny_runtime):
    d = describe(tiny_runtime, "auto", FORCED)
    assert d.family == "llama" and d.parameters == tiny_runtime.checkpoint.params
    assert d.forward == tiny_runtime.forward_kind("auto") and d.forward_reason
    assert (d.weights, d.dtype, d.device) == ("float32", "float32", "cpu")
    assert d.checkpoint_bytes == 4 * d.parameters
    assert (d.fim, d.fim_order, d.encoder_rule) == ("inkling", "spm", tiny_runtime.encoder.rule)
    assert (d.drafting, d.drafting_state, d.drafting_reason) == FORCED
    assert list(d.as_dict()) == [f.name for f in dataclasses.fields(ModelDescription)]


def test_a_forward_named_and_a_model_without_fim_say_so(tiny_runtime):
    bare = dataclasses.replace(tiny_runtime, fim=None, fim_order="none", forwards=None)
    d = describe(bare, "compact", FORCED)
    assert (d.forward, d.forward_reason) == ("compact", "model.forward is compact")
    assert (d.fim, d.fim_order) == ("none", "none")


def test_resident_bytes_count_a_tied_embedding_once(tiny_runtime):
    """The tied embedding and the output layer share one storage, laid out as two parameters."""
    rt = dataclasses.replace(tiny_runtime, forwards=None)   # no native panels made
    model = rt.model
    params = list(model.parameters())
    assert sum(p.numel() for p in params) > rt.params           # the tie counted twice
    buffers = {b.untyped_storage().data_ptr(): b.untyped_storage().nbytes()
               for b in model.buffers()}
    assert resident_bytes(rt) == 4 * rt.params + sum(buffers.values())


def test_the_line_is_one_line_naming_each_choice(tiny_runtime):
    d = describe(tiny_runtime, "auto", FORCED)
    line = d.line()
    assert "\n" not in line and line.startswith(f"inkling: model {tiny_runtime.path}: llama")
    for said in (f"{d.forward} forward", "float32 weights", "FIM inkling spm",
                 f"encoder {d.encoder_rule}", "drafting none (forced: completion.draft is none)"):
        assert said in line, said
