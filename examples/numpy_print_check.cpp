// numpy_print_check: compares examples/numpy_print.hpp with NumPy's own output for the
// arrays in tests/data/examples/numpy_print_cases.txt (tools/references/example_expectations.py).
// Usage: numpy_print_check CASES_FILE. Exit status 0 if every case matches, else 1.

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "numpy_print.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: numpy_print_check CASES_FILE\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::cerr << "numpy_print_check: cannot open " << argv[1] << "\n";
        return 2;
    }
    namespace np = examples::numpy;
    int cases = 0, failures = 0;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string kind;
        words >> kind;
        std::string actual, expected;
        if (kind == "case") {
            int precision = 0, suppress = 0;
            std::size_t n = 0;
            words >> precision >> suppress >> n;
            std::vector<double> values(n);
            for (double& v : values) {
                std::string token;
                words >> token;
                v = std::strtod(token.c_str(), nullptr);
            }
            for (std::string text; std::getline(in, text) && text != "end";)
                expected += (expected.empty() ? "" : "\n") + text;
            try {
                actual = np::array_str(values, {precision, suppress != 0});
            } catch (const std::exception& e) {
                actual = std::string("exception: ") + e.what();
            }
        } else if (kind == "round") {
            int decimals = 0;
            std::string x, rounded;
            words >> decimals >> x >> rounded;
            std::ostringstream a;
            a << std::hexfloat << np::round(std::strtod(x.c_str(), nullptr), decimals);
            actual = a.str();
            std::ostringstream e;
            e << std::hexfloat << std::strtod(rounded.c_str(), nullptr);
            expected = e.str();
        } else if (kind == "repr") {
            std::string x;
            words >> x >> expected;
            actual = np::float_repr(std::strtod(x.c_str(), nullptr));
        } else {
            std::cerr << "numpy_print_check: unknown record '" << kind << "'\n";
            return 2;
        }
        ++cases;
        if (actual != expected) {
            ++failures;
            std::cerr << "MISMATCH: " << line << "\n  numpy: " << expected << "\n  ours:  " << actual << "\n";
        }
    }
    std::cout << cases - failures << " passed, " << failures << " failed\n";
    return failures == 0 && cases > 0 ? 0 : 1;
}
