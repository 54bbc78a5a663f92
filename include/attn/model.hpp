#pragma once
// The umbrella of the model layer (include/attn/model/): loading a saved transformer
// (manifest, safetensors weights, sharded checkpoints, GGUF files, BPE tokenizer), its fast forward
// pass and the readable reference forward it is tested against, incremental decoding and
// generation, and activations to keep and change (attribution, logit lens, patching).
// Includes the core layer (<attn/attn.hpp>).

#include "attn/attn.hpp"
#include "attn/formats/gguf.hpp"
#include "attn/formats/gguf_tensors.hpp"
#include "attn/formats/safetensors.hpp"
#include "attn/formats/tensor_files.hpp"
#include "attn/hooks/activations.hpp"
#include "attn/hooks/interventions.hpp"
#include "attn/model/architectures.hpp"
#include "attn/model/attention_rows.hpp"
#include "attn/model/decoder.hpp"
#include "attn/model/generate.hpp"
#include "attn/model/gguf_architectures.hpp"
#include "attn/model/model.hpp"
#include "attn/model/reference_forward.hpp"
#include "attn/text/tokenizer.hpp"
