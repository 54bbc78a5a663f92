#pragma once
// attn::Model<float> (its loaders) and its forward pass are compiled once, in model_instance.cpp,
// for the project's own programs that load a model (the store examples, the model benchmarks, the
// peak-memory test), which include this header instead of compiling them again each. Code of
// your own needs nothing like this.
#include <attn/model/model.hpp>

extern template class attn::Model<float>;
extern template class attn::detail::FastForward<float>;
