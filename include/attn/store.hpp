#pragma once
// The store model's own conventions, on top of the model layer: its text format (a product's
// ids, a prompt). Everything else about the store model is a Model like any other.

#include "attn/model.hpp"
#include "attn/store/text.hpp"
