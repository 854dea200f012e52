// Entry point placeholder replaced by the CNI dispatcher wiring.
int main() { return 0; }
