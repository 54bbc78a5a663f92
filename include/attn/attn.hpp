#pragma once
// attn: header-only causal multi-head attention on Eigen. The umbrella header.

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "attn/heads.hpp"
#include "attn/mask.hpp"
#include "attn/projection.hpp"
#include "attn/rope.hpp"
#include "attn/scoring.hpp"
#include "attn/softmax.hpp"
#include "attn/types.hpp"
#include "attn/version.hpp"
