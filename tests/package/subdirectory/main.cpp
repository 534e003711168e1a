#include <ets/version.hpp>
int main() { return ets::version_string() == nullptr; }
