// explain_copy: is the chapter's copy head the cause of the model writing the name's word?
// On the exemplar (name ending in "cover") against the same text with the name ending in
// "set", at the description's second "furniture": direct logit attribution of
// logit(cover) − logit(set) per head and MLP, the logit lens per layer, and activation
// patching from the clean run into the corrupted one over heads and over residual positions.
//
//   explain_copy [--model DIR] [--svg FILE] [--threads N]
#include <attn/hooks/interventions.hpp>
#include <attn/model/model.hpp>
#include <attn/store.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "store_model.hpp"
#include "svg_heatmap.hpp"

namespace {

using attn::Index;

constexpr const char* usage = R"(usage: explain_copy [--model DIR] [--svg FILE] [--threads N] [--quiet]

Tests the chapter's copying claim causally on the exemplar: the clean text names a
"double chaise patio furniture cover", the corrupted one a "... set" (the same length); the
metric is logit(cover) − logit(set) at the description's second "furniture". Prints the
direct logit attribution per head and MLP, the logit lens, and activation patching from
the clean run into the corrupted one, per head and per residual position (0 = corrupted,
1 = clean). Layers and heads are counted from 1, as the chapter does.

options:
  --model DIR   model directory (default: the shipped models/store)
  --svg FILE    also draw the two patching grids as SVG
  --threads N   threads for the forward passes (default 1; the same numbers for any N)
  --quiet       no progress lines (they appear only when stderr is a terminal)
  --help        show this help and exit
)";

struct Arguments {
    std::optional<std::string> model, svg;
    int threads = 1;
};

Arguments parse(int argc, char** argv) {
    Arguments a;
    store::CommandLine line("explain_copy", usage, argc, argv);
    while (line.next()) {
        if (line.is("--model"))
            a.model = line.value();
        else if (line.is("--quiet"))
            store::quiet() = true;
        else if (line.is("--svg"))
            a.svg = line.value();
        else if (line.is("--threads"))
            a.threads = int(std::min<long long>(line.count(), 1024));
        else
            line.unknown();
    }
    return a;
}

/// " 0.12", "-0.12"; values that round to zero print as " 0.00", never "-0.00".
std::string signed_fixed(double value) {
    if (std::abs(value) < 0.005) value = 0.0;
    return (value >= 0 ? " " : "") + store::fixed(value);
}

/// A (rows × columns) panel of scores in [0, 1] for the SVG (negative scores drawn as 0).
store::HeatmapPanel panel(const std::string& title, const attn::Matrix<double>& scores) {
    attn::Matrix<double> square = attn::Matrix<double>::Zero(scores.cols(), scores.cols());
    square.topRows(std::min(scores.rows(), scores.cols())) = scores.topRows(std::min(scores.rows(), scores.cols()));
    return {title, square.cwiseMax(0.0).cwiseMin(1.0)};
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments arguments = parse(argc, argv);
    return store::report_errors("explain_copy", [&] {
        const auto model = store::load_model<double>(store::model_directory(arguments.model));
        const attn::Tokenizer& tokenizer = model.tokenizer();
        const std::string description =
            "protect your outdoor patio furniture from harsh elements with this outdoor patio furniture cover.";
        const std::vector<int> clean =
            attn::store::product_ids(model, "double chaise patio furniture cover", description);
        const std::vector<int> corrupted =
            attn::store::product_ids(model, "double chaise patio furniture set", description);
        const int cover = tokenizer.encode("cover").at(0), set = tokenizer.encode("set").at(0);
        // the description's second "furniture": the last furniture before the final cover
        const int furniture = tokenizer.encode("furniture").at(0);
        Index position = 0;
        for (Index i = 0; i + 1 < Index(clean.size()); ++i)
            if (clean[std::size_t(i)] == furniture && clean[std::size_t(i + 1)] == cover) position = i;
        const attn::LogitMetric metric{position, cover, set};
        attn::ForwardOptions forward;
        forward.threads = arguments.threads;

        std::vector<std::string> tokens;
        for (int id : clean) tokens.push_back(tokenizer.token(id));
        std::cout << "clean:     " << tokenizer.decode(clean) << "\n"
                  << "corrupted: the same with the name's cover</w> (position 6) replaced by set</w>\n"
                  << "metric:    logit(cover) − logit(set) at position " << position << " ("
                  << tokens[std::size_t(position)] << ", the description's second)\n\n";

        // 1. direct logit attribution on the clean run
        attn::HookOptions<double> keep;
        keep.forward = forward;
        keep.keep = attn::attribution_activations(model.settings());
        for (Index l = 0; l < model.settings().layers; ++l)
            keep.keep.push_back(attn::activation_name({attn::Point::resid_post, l}));
        const attn::HookedResult<double> run = attn::run_with_hooks(model, clean, keep);
        const attn::AttributionResult<double> dla = attn::logit_attribution(model, run, metric);
        const Index heads = model.settings().heads, layers = model.settings().layers;
        std::cout << "direct logit attribution of the metric (clean run), by head and MLP:\n          ";
        for (Index h = 0; h < heads; ++h) std::cout << "  head " << h + 1;
        std::cout << "     MLP\n";
        for (Index l = 0; l < layers; ++l) {
            std::cout << "  layer " << l + 1 << " ";
            for (Index h = 0; h <= heads; ++h)
                std::cout << std::setw(8) << signed_fixed(dla.shares(1 + l * (heads + 1) + h));
            std::cout << "\n";
        }
        std::cout << "  embedding " << signed_fixed(dla.shares(0)) << ", final norm's bias "
                  << signed_fixed(dla.shares(dla.shares.size() - 1)) << "; sum " << store::fixed(dla.shares.sum())
                  << " = the metric " << store::fixed(dla.metric) << "\n\n";

        // 2. logit lens
        const attn::LensResult<double> lens = attn::logit_lens(model, run, position);
        std::cout << "logit lens at position " << position << " (final norm and unembedding after each layer):\n";
        for (std::size_t s = 0; s < lens.stages.size(); ++s) {
            Index top = 0;
            lens.probabilities.row(Index(s)).maxCoeff(&top);
            std::cout << "  " << std::left << std::setw(10)
                      << (s == 0 ? std::string("embedding") : "layer " + std::to_string(s)) << std::right
                      << " P(cover) " << store::fixed(lens.probabilities(Index(s), cover)) << "  P(set) "
                      << store::fixed(lens.probabilities(Index(s), set)) << "  top " << tokenizer.token(int(top))
                      << "\n";
        }

        // 3. activation patching
        const attn::PatchingResult<double> by_head = [&] {
            store::Ticker ticker("explain_copy: patching " + std::to_string(layers * heads) + " heads");
            return attn::patch_heads(model, clean, corrupted, metric, forward);
        }();
        std::cout << "\nactivation patching, clean → corrupted (metric clean " << store::fixed(by_head.clean)
                  << ", corrupted " << store::fixed(by_head.corrupted) << "); per head, every position:\n          ";
        for (Index h = 0; h < heads; ++h) std::cout << "  head " << h + 1;
        std::cout << "\n";
        for (Index l = 0; l < layers; ++l) {
            std::cout << "  layer " << l + 1 << " ";
            for (Index h = 0; h < heads; ++h) std::cout << std::setw(8) << signed_fixed(by_head.scores(l, h));
            std::cout << "\n";
        }
        Index best_layer = 0, best_head = 0;
        by_head.scores.maxCoeff(&best_layer, &best_head);
        std::cout << "head restoring the most: layer " << best_layer + 1 << ", head " << best_head + 1 << " ("
                  << store::fixed(by_head.scores(best_layer, best_head)) << ")\n";

        // necessity: the clean run with that head's output taken from the corrupted run
        attn::HookOptions<double> corrupted_z;
        corrupted_z.forward = forward;
        const std::string z = attn::activation_name({attn::Point::z, best_layer});
        corrupted_z.keep = {z};
        const attn::HookedResult<double> corrupted_run = attn::run_with_hooks(model, corrupted, corrupted_z);
        attn::HookOptions<double> knock_out;
        knock_out.forward = forward;
        const Index d = model.settings().head_size;
        knock_out.interventions.push_back(
            attn::Intervention<double>::replace(z, corrupted_run.cache[z].middleCols(best_head * d, d), best_head));
        const auto knocked = attn::run_with_hooks(model, clean, knock_out).result.logits;
        const double without = knocked(position, cover) - knocked(position, set);
        std::cout << "clean run with only that head from the corrupted run: metric " << store::fixed(without) << " ("
                  << store::fixed((without - by_head.corrupted) / (by_head.clean - by_head.corrupted))
                  << " of the way from corrupted to clean)\n";

        const attn::PatchingResult<double> by_position = [&] {
            store::Ticker ticker("explain_copy: patching the residual stream at " + std::to_string(clean.size()) +
                                 " positions × " + std::to_string(layers) + " layers");
            return attn::patch_residual(model, clean, corrupted, metric, forward);
        }();
        std::cout << "\nper residual stream entering each layer, at each position up to " << position << ":\n"
                  << "  position token            layer 1 layer 2 layer 3 layer 4\n";
        for (Index i = 0; i <= position; ++i) {
            std::cout << "  " << std::setw(8) << i << " " << std::left << std::setw(16) << tokens[std::size_t(i)]
                      << std::right;
            for (Index l = 0; l < layers; ++l) std::cout << std::setw(8) << signed_fixed(by_position.scores(l, i));
            std::cout << "\n";
        }
        if (arguments.svg) {
            std::ofstream out(*arguments.svg);
            if (!out) throw attn::io_error(*arguments.svg + ": cannot open for writing");
            attn::Matrix<double> heads_grid = attn::Matrix<double>::Zero(tokens.size(), tokens.size());
            heads_grid.topLeftCorner(layers, heads) = by_head.scores;
            std::vector<store::HeatmapPanel> panels{
                {"patching per residual stream: rows are layers 1-4 entering, columns positions",
                 panel("", by_position.scores).weights},
                {"patching per head: rows are layers 1-4, columns heads 1-4", heads_grid.cwiseMax(0.0).cwiseMin(1.0)}};
            out << store::heatmap_svg(panels, tokens, 2);
            std::cout << "\nwrote " << *arguments.svg << "\n";
        }
    });
}
