// attn::Model<float> (its loaders) and its forward pass compiled once (model_instance.hpp): a
// program that declares them `extern template` then builds in a fraction of the time.
#include "model_instance.hpp"

template class attn::Model<float>;
template class attn::detail::FastForward<float>;  // the forward pass: Model::forward, Decoder, hooks
