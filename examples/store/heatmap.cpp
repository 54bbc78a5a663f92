// heatmap: an SVG of a model's attention for a text (the store model: a product's): one head,
// or a grid of every head (rows: layers, columns: heads).
//
//   heatmap [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --file PATH | --ids 1,2,3)
//           [--layer L --head H] [--threads T] [--quiet] (--output FILE.svg | --html FILE.html | both)
#include <fstream>
#include <iostream>
#include <optional>

#include "../cli.hpp"
#include "store_model.hpp"
#include "store_page.hpp"
#include "svg_heatmap.hpp"

namespace {
constexpr const char* usage =
    R"(usage: heatmap [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --file PATH | --ids 1,2,3)
               [--layer L --head H] [--threads T] [--quiet] [--output FILE] [--html FILE]

Writes an SVG heatmap of a model's attention for a text: every head in a grid (rows:
layers, columns: heads), or one head with --layer and --head (1-based); and/or the
interactive page of inspect --html (opening on that head's matrix view).

options:
  --model DIR         model directory: the store model (default: the shipped models/store)
                      or a Hugging Face checkpoint, or a .gguf file (its tokenizer, if it has one)
  --name TEXT         the store product's name
  --description TEXT  the store product's description (default: none)
  --text TEXT         any text, read by the model directory's tokenizer
  --file PATH         the text of a UTF-8 file instead ("-": standard input)
  --ids LIST          comma-separated token ids instead of a text
  --threads T         threads for the forward pass (default 1)
  --layer L --head H  only this head
  --output FILE       where to write the SVG
  --html FILE         where to write the interactive page
  --quiet             no progress lines (they appear only when stderr is a terminal)
  --help              show this help and exit

Outputs larger than 64 MiB are announced on stderr, with their size, before they are written.
)";

[[noreturn]] void fail_usage(const std::string& problem) {
    std::cerr << "heatmap: " << problem << "\n\n" << usage;
    std::exit(2);
}

int one_based(const std::string& flag, const std::string& text, long count) {
    if (const std::optional<long long> value = examples::parse_whole_number(text, 1, count)) return int(*value) - 1;
    fail_usage(flag + " needs an integer from 1 to " + std::to_string(count) + ", got '" + text + "'");
}
}  // namespace

int main(int argc, char** argv) {
    std::optional<std::string> model_flag, name, description, text, file, id_list, threads, layer, head, output, html;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&](std::optional<std::string>& slot) {
            if (i + 1 >= argc) fail_usage(arg + " needs a value");
            slot = argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::cout << usage;
            return 0;
        } else if (arg == "--model")
            value(model_flag);
        else if (arg == "--name")
            value(name);
        else if (arg == "--description")
            value(description);
        else if (arg == "--text")
            value(text);
        else if (arg == "--file")
            value(file);
        else if (arg == "--ids")
            value(id_list);
        else if (arg == "--quiet")
            store::quiet() = true;
        else if (arg == "--threads")
            value(threads);
        else if (arg == "--layer")
            value(layer);
        else if (arg == "--head")
            value(head);
        else if (arg == "--output")
            value(output);
        else if (arg == "--html")
            value(html);
        else
            fail_usage("unknown argument '" + arg + "'");
    }
    if (int(name.has_value()) + int(text.has_value()) + int(file.has_value()) + int(id_list.has_value()) != 1)
        fail_usage("give one of --name, --text, --file and --ids");
    if (description && !name) fail_usage("--description goes with --name");
    if (!output && !html) fail_usage("--output or --html is required");
    if (layer.has_value() != head.has_value()) fail_usage("--layer and --head go together");
    return store::report_errors("heatmap", [&] {
        const auto model = store::load_model<float>(store::model_directory(model_flag));
        const attn::ModelSettings& settings = model.settings();
        const std::vector<int> ids =
            store::text_ids(model, store::text_flag(text, file), id_list, name, description.value_or(""), false);
        attn::ForwardOptions options;
        options.keep_attention = true;
        options.threads = threads ? one_based("--threads", *threads, 256) + 1 : 1;
        const auto result = [&] {
            store::Ticker ticker("heatmap: " + std::to_string(ids.size()) + " positions through " +
                                 std::to_string(settings.layers) + " layers");
            return model.forward(ids, options);
        }();
        const auto& attention = result.attention;
        std::vector<std::string> tokens;
        for (int id : ids) tokens.push_back(store::token_text(model.tokenizer(), id));
        std::vector<store::HeatmapPanel> panels;
        for (attn::Index l = 0; l < settings.layers; ++l)
            for (attn::Index h = 0; h < settings.heads; ++h)
                panels.push_back({"layer " + std::to_string(l + 1) + ", head " + std::to_string(h + 1),
                                  attention.head(l, h).cast<double>()});
        int columns = int(settings.heads);
        attn::PageOptions page;
        page.title = name ? *name : text ? *text : file ? *file : std::to_string(ids.size()) + " token ids";
        if (layer) {
            const int l = one_based("--layer", *layer, long(settings.layers));
            const int h = one_based("--head", *head, long(settings.heads));
            panels = {panels[std::size_t(l * settings.heads + h)]};
            columns = 1;
            page.open_head = {l, h};
            page.view = attn::PageView::matrix;
        }
        if (html) {
            store::write_page(*html, model, ids, result, page, "heatmap");
            std::cout << "wrote " << *html << ": " << settings.layers * settings.heads << " heads × " << ids.size()
                      << " positions\n";
        }
        if (!output) return;
        const std::string svg = store::heatmap_svg(panels, tokens, columns);
        store::announce_size("heatmap", svg.size(), "SVG to " + *output);
        std::ofstream out(*output);
        if (!out) throw attn::io_error(*output + ": cannot write the heatmap");
        out << svg;
        if (!out.flush()) throw attn::io_error(*output + ": writing the heatmap failed");
        std::cout << "wrote " << *output << ": " << panels.size() << " head" << (panels.size() > 1 ? "s" : "") << " × "
                  << ids.size() << " × " << ids.size() << " positions\n";
    });
}
