#pragma once
// Kept for code written against attn 0.1, where the store model lived here: the same as
// <attn/model.hpp>.

#include "attn/model.hpp"
