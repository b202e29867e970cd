"""The recipe that trains the bundled model: corpus packing, samples, the tokenizer, the
training loop (CPU and GPU), int8 conversion, shipping and the model card. Nothing the
server runs imports it; its extra dependencies are the `train` extra."""
