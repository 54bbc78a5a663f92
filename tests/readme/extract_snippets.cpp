// Writes every ```cpp block of a Markdown file as its own program, with a CMake project that
// builds them all against the installed attn package and a list of the runs to make:
//
//   attn_readme_snippets README.md OUT_DIR
//
// A block runs once without arguments; a line `<!-- also run with: ARGS -->` just before it
// adds a run with ARGS. Writes OUT_DIR/snippet_N.cpp, OUT_DIR/CMakeLists.txt, OUT_DIR/runs.txt.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Snippet {
    std::string code;
    std::vector<std::string> extra_runs;
};

std::vector<Snippet> cpp_blocks(std::istream& markdown) {
    const std::string also_run = "<!-- also run with: ";
    std::vector<Snippet> snippets;
    std::vector<std::string> pending_runs;
    std::string line;
    bool inside = false;
    while (std::getline(markdown, line)) {
        if (inside) {
            if (line.rfind("```", 0) == 0) {
                inside = false;
                continue;
            }
            snippets.back().code += line + "\n";
        } else if (line == "```cpp") {
            inside = true;
            snippets.push_back({"", pending_runs});
            pending_runs.clear();
        } else if (line.rfind(also_run, 0) == 0 && line.size() > also_run.size() + 4) {
            pending_runs.push_back(line.substr(also_run.size(), line.size() - also_run.size() - 4));
        } else if (!line.empty()) {
            pending_runs.clear();  // a note applies to the block right after it
        }
    }
    if (inside) throw std::runtime_error("a ```cpp block is not closed");
    return snippets;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: attn_readme_snippets README.md OUT_DIR\n";
        return 2;
    }
    try {
        std::ifstream markdown(argv[1]);
        if (!markdown) throw std::runtime_error(std::string("cannot read ") + argv[1]);
        const std::vector<Snippet> snippets = cpp_blocks(markdown);
        if (snippets.empty()) throw std::runtime_error(std::string("no ```cpp block in ") + argv[1]);
        const std::string out = argv[2];
        std::ofstream cmake(out + "/CMakeLists.txt"), runs(out + "/runs.txt");
        cmake << "cmake_minimum_required(VERSION 3.25)\nproject(attn_readme_snippets LANGUAGES CXX)\n"
                 "find_package(attn REQUIRED CONFIG)\n";
        for (std::size_t i = 0; i < snippets.size(); ++i) {
            const std::string name = "snippet_" + std::to_string(i + 1);
            std::ofstream(out + "/" + name + ".cpp") << snippets[i].code;
            cmake << "add_executable(" << name << " " << name << ".cpp)\n"
                  << "target_link_libraries(" << name << " PRIVATE attn::attn)\n";
            runs << name << "\n";
            for (const std::string& arguments : snippets[i].extra_runs) runs << name << " " << arguments << "\n";
        }
        std::cout << snippets.size() << " snippets\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "attn_readme_snippets: " << e.what() << "\n";
        return 1;
    }
}
