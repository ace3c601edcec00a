func.func @f() {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
scf.execute_region {
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
}
return
}
