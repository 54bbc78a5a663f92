"""Modules shared by the training, reference and benchmark scripts: the model, the store tokenizer, safetensors I/O."""
