// attn::Model<float> (its loaders) and its forward pass compiled once for all the store examples,
// which declare them `extern template` in store_model.hpp: each example then builds in a
// fraction of the time. Code of your own needs nothing like this.
#include <attn/model/model.hpp>

template class attn::Model<float>;
template class attn::detail::FastForward<float>;  // the forward pass: Model::forward, Decoder, hooks
