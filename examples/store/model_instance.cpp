// attn::Model<float> (its loader and forward pass) compiled once for all the store examples,
// which declare it `extern template` in store_model.hpp: each example then builds in less
// than half the time. Code of your own needs nothing like this.
#include <attn/model/model.hpp>

template class attn::Model<float>;
