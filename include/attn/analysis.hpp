#pragma once
// The umbrella of the analysis layer (include/attn/analysis/): measuring what a model's
// heads do from its attention. Needs the model layer's result types, not its loader:
// nothing here includes nlohmann_json.

#include "attn/analysis/head_detectors.hpp"
#include "attn/analysis/head_scores.hpp"
#include "attn/analysis/key_pattern.hpp"
