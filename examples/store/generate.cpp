// generate: a model continues a text (the store model: a product's description), and for
// every token it writes shows where each last-layer head looked when choosing it.
//
//   generate [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --file PATH | --ids 1,2,3)
//            [--seed N] [--temperature T] [--top-k K] [--top-p P] [--max-tokens M] [--threads T] [--quiet] [--json]
#include <attn/model/generate.hpp>
#include <attn/model/model.hpp>
#include <attn/threads.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "store_model.hpp"

namespace {

constexpr const char* usage =
    R"(usage: generate [--model DIR] (--name TEXT [--description TEXT] | --text TEXT | --file PATH | --ids 1,2,3)
                [--seed N] [--temperature T] [--top-k K] [--top-p P] [--max-tokens M] [--threads T]
                [--quiet] [--json]

Continues a text token by token on a key/value cache (the store model: `<s> name <sep>
description`), and prints each written token, the probability the model gave it, and for each
last-layer head the token it weighted most when choosing it (name:, description:, markers), then
the prompt's and the steps' speed.

options:
  --model DIR         model directory: the store model (default: the shipped models/store)
                      or a Hugging Face checkpoint (config.json, model.safetensors), or a
                      .gguf file (with the tokenizer in its metadata, if it has one)
  --name TEXT         the store product's name
  --description TEXT  the start of its description, to continue (default: none)
  --text TEXT         any text to continue, read by the model directory's tokenizer
  --file PATH         the text of a UTF-8 file instead ("-": standard input)
  --ids LIST          comma-separated token ids to continue instead of a text
  --threads T         threads for the prompt and every step, kept for the whole run (default 1;
                      0: one per hardware thread); the written tokens are the same for any count
  --seed N            seed of the sampler's np.random.default_rng (default 0)
  --temperature T     0 writes the most likely token (default); > 0 samples
  --top-k K           sample among the K most likely tokens (default 0: all)
  --top-p P           sample among the fewest tokens whose probability reaches P (default 1)
  --max-tokens M      write at most M tokens (default: until </s> or the context's end)
  --json              one JSON object: prompt and written ids and tokens, probabilities,
                      the stop reason, every step's attention rows (layers × heads ×
                      positions so far) and the timings (prefill_ms, decode_ms_per_token)
  --quiet             no progress lines (they appear only when stderr is a terminal)
  --help              show this help and exit

Outputs larger than 64 MiB are announced on stderr, with their size, before they are written.
)";

struct Arguments {
    std::optional<std::string> model, name, text, file, ids;
    std::string description;
    attn::GenerationOptions options;
    bool json = false;
};

Arguments parse(int argc, char** argv) {
    Arguments a;
    store::CommandLine line("generate", usage, argc, argv);
    while (line.next()) {
        if (line.is("--model")) {
            a.model = line.value();
        } else if (line.is("--name")) {
            a.name = line.value();
        } else if (line.is("--description")) {
            a.description = line.value();
        } else if (line.is("--text")) {
            a.text = line.value();
        } else if (line.is("--file")) {
            a.file = line.value();
        } else if (line.is("--quiet")) {
            store::quiet() = true;
        } else if (line.is("--ids")) {
            a.ids = line.value();
        } else if (line.is("--threads")) {
            a.options.decode.threads = int(line.count());
        } else if (line.is("--seed")) {
            a.options.sampling.seed = std::uint64_t(line.count());
        } else if (line.is("--temperature")) {
            a.options.sampling.temperature = line.number(0.0, 100.0);
        } else if (line.is("--top-k")) {
            a.options.sampling.top_k = attn::Index(line.count());
        } else if (line.is("--top-p")) {
            a.options.sampling.top_p = line.number(0.0, 1.0);
            if (a.options.sampling.top_p == 0.0) line.fail("--top-p must be greater than 0");
        } else if (line.is("--max-tokens")) {
            a.options.max_tokens = attn::Index(line.count());
        } else if (line.is("--json")) {
            a.json = true;
        } else {
            line.unknown();
        }
    }
    if (int(a.name.has_value()) + int(a.text.has_value()) + int(a.file.has_value()) + int(a.ids.has_value()) != 1)
        line.fail("give one of --name, --text, --file and --ids");
    if (!a.description.empty() && !a.name) line.fail("--description goes with --name");
    return a;
}

/// The position each last-layer head weighted most in `row` (heads × (1 × positions)).
std::string strongest(const attn::AttentionWeights<float>& row, attn::Index h, const attn::Tokenizer& tokenizer,
                      const std::vector<int>& text, std::size_t current, std::size_t separator) {
    attn::Index best = 0;
    const float weight = row.head(h).row(0).maxCoeff(&best);
    return store::label(tokenizer, text, std::size_t(best), current, separator) + " " + store::fixed(weight);
}

void print_table(const attn::Model<float>& model, const attn::GenerationResult<float>& written) {
    const attn::Tokenizer& tokenizer = model.tokenizer();
    std::vector<int> text = written.prompt;
    text.insert(text.end(), written.ids.begin(), written.ids.end());
    const std::size_t separator = store::separator_position(tokenizer, text);
    const attn::Index last_layer = model.settings().layers - 1;
    std::cout << "prompt: " << store::text_of(tokenizer, written.prompt) << "\n"
              << "written: " << store::text_of(tokenizer, written.ids) << "\n"
              << "stopped: " << attn::to_string(written.stop) << "\n\n"
              << "each written token, the probability the model gave it, and the token each head of layer "
              << last_layer + 1 << " weighted most when choosing it:\n";
    for (std::size_t k = 0; k < written.ids.size(); ++k) {
        const std::size_t chooser = written.prompt.size() + k - 1;  // the position whose logits chose it
        std::cout << "  " << std::left << std::setw(16) << store::token_text(tokenizer, written.ids[k]) << std::right
                  << " " << store::fixed(written.probabilities[k]);
        const attn::AttentionWeights<float>& row = written.attention[k].layer(last_layer);
        for (attn::Index h = 0; h < row.heads(); ++h)
            std::cout << " | head " << h + 1 << ": " << strongest(row, h, tokenizer, text, chooser, separator);
        std::cout << "\n";
    }
    std::cout << "\nprompt: " << written.prompt.size() << " tokens in " << store::fixed(written.prefill_milliseconds)
              << " ms (" << store::fixed(1000.0 * double(written.prompt.size()) / written.prefill_milliseconds, 1)
              << " tokens/s)\n";
    if (written.step_milliseconds > 0)
        std::cout << "generation: " << store::fixed(written.step_milliseconds) << " ms per token ("
                  << store::fixed(1000.0 / written.step_milliseconds, 1) << " tokens/s)\n";
}

nlohmann::json to_json(const attn::Model<float>& model, const attn::GenerationResult<float>& written) {
    const attn::Tokenizer& tokenizer = model.tokenizer();
    const auto tokens = [&](const std::vector<int>& ids) {
        std::vector<std::string> out;
        for (int id : ids) out.push_back(store::token_text(tokenizer, id));
        return out;
    };
    nlohmann::json steps = nlohmann::json::array();
    for (const attn::ModelAttention<float>& row : written.attention) {
        nlohmann::json step = nlohmann::json::array();  // layers × heads × positions
        for (attn::Index l = 0; l < row.layers(); ++l) {
            const attn::AttentionWeights<float>& layer = row.layer(l);
            nlohmann::json heads = nlohmann::json::array();
            for (attn::Index h = 0; h < layer.heads(); ++h)
                heads.push_back(std::vector<float>(layer.head(h).data(), layer.head(h).data() + layer.cols()));
            step.push_back(heads);
        }
        steps.push_back(step);
    }
    return {{"prompt_ids", written.prompt},
            {"prompt_tokens", tokens(written.prompt)},
            {"ids", written.ids},
            {"tokens", tokens(written.ids)},
            {"probabilities", written.probabilities},
            {"stop", attn::to_string(written.stop)},
            {"text", store::text_of(tokenizer, written.ids)},
            {"attention", steps},
            {"timings",
             {{"prefill_ms", written.prefill_milliseconds}, {"decode_ms_per_token", written.step_milliseconds}}}};
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments arguments = parse(argc, argv);
    return store::report_errors("generate", [&] {
        const auto model = store::load_model<float>(store::model_directory(arguments.model));
        attn::GenerationOptions options = arguments.options;
        options.decode.keep_attention = true;
        std::optional<attn::Workers> workers;  // kept: a thread started for every token would cost more than it saves
        if (options.decode.threads.count() != 1)
            options.decode.threads = workers.emplace(options.decode.threads.count());
        const std::vector<int> prompt = store::text_ids(model, store::text_flag(arguments.text, arguments.file),
                                                        arguments.ids, arguments.name, arguments.description, true);
        const attn::GenerationResult<float> written = [&] {
            store::Ticker ticker("generate: a prompt of " + std::to_string(prompt.size()) + " tokens, then " +
                                 (options.max_tokens > 0 ? "up to " + std::to_string(options.max_tokens) + " more"
                                                         : std::string("on to </s> or the context's end")));
            return attn::generate(model, prompt, options);
        }();
        if (arguments.json) {
            const std::string json = to_json(model, written).dump();
            store::announce_size("generate", json.size() + 1, "of JSON to standard output");
            std::cout << json << "\n";
        } else {
            print_table(model, written);
        }
    });
}
