#pragma once
// attn: header-only causal multi-head attention on Eigen.
//
// The umbrella of the core layer (include/attn/core/): the chapter's steps, attention
// built from them, and the threads the kernels run on. No file I/O, no JSON.
// The model layer is <attn/model.hpp>; the analysis layer is <attn/analysis.hpp>.

#include "attn/core/activation.hpp"
#include "attn/core/attention.hpp"
#include "attn/core/embedding.hpp"
#include "attn/core/head_statistics.hpp"
#include "attn/core/heads.hpp"
#include "attn/core/kv_cache.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/norm.hpp"
#include "attn/core/numpy_random.hpp"
#include "attn/core/projection.hpp"
#include "attn/core/rope.hpp"
#include "attn/core/sampling.hpp"
#include "attn/core/scoring.hpp"
#include "attn/core/softmax.hpp"
#include "attn/core/types.hpp"
#include "attn/core/weights_on_demand.hpp"
#include "attn/error.hpp"
#include "attn/threads.hpp"
#include "attn/version.hpp"
