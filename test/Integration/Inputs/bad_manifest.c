/* A "compiled step" whose manifest has a malformed shape (step-runner.test). */
const char muir_step_manifest[] = "0 w param 4xq f32\n";
void muir_step_packed(void **args) { (void)args; }
