// induction_heads: TransformerLens's classic test on any model directory. A random sequence of
// tokens, repeated: a head that has learned induction attends, in the second copy, to the
// token after the earlier copy of the current one (position i − L + 1). Each head's score is
// its mean weight there over the second copy's positions and over several random sequences.
//
//   induction_heads [--model DIR] [--length L] [--sequences N] [--seed S] [--threads T] [--svg FILE]
#include <attn/model/model.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "store_model.hpp"
#include "svg_heatmap.hpp"

namespace {

constexpr const char* usage = R"(usage: induction_heads [--model DIR] [--length L] [--sequences N] [--seed S]
                       [--threads T] [--svg FILE] [--quiet]

Runs the model on random token sequences repeated twice (after the tokenizer's beginning-of-text
token, if it has one) and prints each head's induction score: its mean attention weight, over
the second copy, on the token after the earlier copy of the current token. 1 is a perfect
induction head; an even spread over the positions gives about 1 / position.

options:
  --model DIR     model directory: the store model (default) or a Hugging Face checkpoint,
                  or a .gguf file
  --length L      tokens in each random sequence (default: 50, or what fits the context twice)
  --sequences N   random sequences to average over (default 8)
  --seed S        seed of the random tokens (default 0)
  --threads T     threads for each forward pass (default 1; 0: one per hardware thread)
  --svg FILE      also draw the scores as a table of layers × heads
  --quiet         no progress lines (they appear only when stderr is a terminal)
  --help          show this help and exit
)";

struct Arguments {
    std::optional<std::string> model, svg;
    long long length = 0, sequences = 8, seed = 0, threads = 1;
};

Arguments parse(int argc, char** argv) {
    Arguments a;
    store::CommandLine line("induction_heads", usage, argc, argv);
    while (line.next()) {
        if (line.is("--model"))
            a.model = line.value();
        else if (line.is("--quiet"))
            store::quiet() = true;
        else if (line.is("--svg"))
            a.svg = line.value();
        else if (line.is("--length"))
            a.length = line.count();
        else if (line.is("--sequences"))
            a.sequences = line.count();
        else if (line.is("--seed"))
            a.seed = line.count();
        else if (line.is("--threads"))
            a.threads = line.count();
        else
            line.unknown();
    }
    if (a.sequences < 1) line.fail("--sequences must be at least 1");
    return a;
}

/// The scores as an SVG table: one cell per head, darker for a higher score.
std::string score_table_svg(const attn::HeadTable& scores) {
    const int cell = 44, margin = 70;
    std::ostringstream svg;
    const int width = margin + cell * int(scores.cols()) + 10, height = margin + cell * int(scores.rows()) + 10;
    svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
        << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
        << "<text x=\"4\" y=\"16\" font-size=\"13\">induction score (rows: layers, columns: heads)</text>\n";
    for (attn::Index h = 0; h < scores.cols(); ++h)
        svg << "<text x=\"" << margin + cell * h + cell / 2 << "\" y=\"" << margin - 8 << "\" text-anchor=\"middle\">"
            << h + 1 << "</text>\n";
    for (attn::Index l = 0; l < scores.rows(); ++l) {
        svg << "<text x=\"" << margin - 8 << "\" y=\"" << margin + cell * l + cell / 2 + 4
            << "\" text-anchor=\"end\">layer " << l + 1 << "</text>\n";
        for (attn::Index h = 0; h < scores.cols(); ++h) {
            const double score = scores(l, h);
            svg << "<rect x=\"" << margin + cell * h << "\" y=\"" << margin + cell * l << "\" width=\"" << cell
                << "\" height=\"" << cell << "\" fill=\"" << store::colour(score) << "\" stroke=\"#ccc\"/>"
                << "<text x=\"" << margin + cell * h + cell / 2 << "\" y=\"" << margin + cell * l + cell / 2 + 4
                << "\" text-anchor=\"middle\" fill=\"" << (score > 0.5 ? "#fff" : "#000") << "\">"
                << store::fixed(score) << "</text>\n";
        }
    }
    svg << "</svg>\n";
    return svg.str();
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments args = parse(argc, argv);
    return store::report_errors("induction_heads", [&] {
        const auto model = store::load_model<float>(store::model_directory(args.model));
        const attn::ModelSettings& s = model.settings();
        const std::optional<int> begin = model.tokenizer().begin_id();
        const attn::Index room = (s.longest - (begin ? 1 : 0)) / 2;
        const attn::Index length = args.length > 0 ? attn::Index(args.length) : std::min<attn::Index>(50, room);
        if (length < 2 || length > room)
            throw attn::argument_error("--length " + std::to_string(length) + " does not fit twice in the context of " +
                                       std::to_string(s.longest) + " positions (at most " + std::to_string(room) + ")");
        // Random tokens away from the lowest ids, where tokenizers keep their special tokens.
        const int lowest = int(std::min<attn::Index>(4, s.vocabulary_size / 2));
        std::mt19937_64 engine(static_cast<std::uint64_t>(args.seed));
        std::uniform_int_distribution<int> token(lowest, int(s.vocabulary_size) - 1);
        attn::ForwardOptions options;
        options.keep_attention = true;
        options.threads = int(args.threads);
        attn::HeadTable scores = attn::HeadTable::Zero(s.layers, s.heads);
        const attn::Index offset = begin ? 1 : 0;  // the first copy's first position
        for (long long sequence = 0; sequence < args.sequences; ++sequence) {
            std::vector<int> ids;
            if (begin) ids.push_back(*begin);
            for (attn::Index i = 0; i < length; ++i) ids.push_back(token(engine));
            ids.insert(ids.end(), ids.begin() + offset, ids.end());
            const attn::ForwardResult<float> result = model.forward(ids, options);
            for (attn::Index l = 0; l < s.layers; ++l)
                for (attn::Index h = 0; h < s.heads; ++h) {
                    const auto weights = result.attention.head(l, h);
                    double sum = 0;
                    for (attn::Index i = offset + length; i < offset + 2 * length; ++i)
                        sum += weights(i, i - length + 1);
                    scores(l, h) += sum / double(length);
                }
            store::progress(std::size_t(sequence + 1), std::size_t(args.sequences));
        }
        scores /= double(args.sequences);

        std::cout << attn::architecture_name(s.architecture) << " model, " << s.layers << " layers × " << s.heads
                  << " heads; " << args.sequences << " random sequences of " << length << " tokens, each repeated\n"
                  << "induction score (rows: layers, columns: heads):\n";
        for (attn::Index l = 0; l < s.layers; ++l) {
            std::cout << "  layer " << l + 1 << ":";
            for (attn::Index h = 0; h < s.heads; ++h) std::cout << "  " << store::fixed(scores(l, h));
            std::cout << "\n";
        }
        attn::Index best_layer = 0, best_head = 0;
        const double best = scores.maxCoeff(&best_layer, &best_head);
        std::cout << "strongest induction head: layer " << best_layer + 1 << ", head " << best_head + 1 << " ("
                  << store::fixed(best) << ")\n"
                  << "an even spread's score: " << store::fixed(2.0 / double(offset + 3 * length)) << "\n";
        if (args.svg) {
            std::ofstream out(*args.svg);
            if (!(out << score_table_svg(scores)) || !out.flush())
                throw attn::io_error(*args.svg + ": cannot open for writing");
            std::cout << "wrote " << *args.svg << "\n";
        }
    });
}
