/*
 * fused_prog.glsl - the body of fused.comp's program, included once per
 * register type R (S for one element, V4 for four): the inputs are loaded
 * first (an output may be exactly one of the inputs, read before it is
 * written), then the immediates (ABI 1.5), the sixteen step slots run (those past the program's steps fold
 * away), and the outputs are stored. CALL, LOAD and STORE are defined by the
 * includer; input j is walk operand j + 1, output k walk operand 0 or k + 5.
 */
R reg[5 + MAX_STEPS + MAX_IMM];
LOAD_INPUT(0, 1) LOAD_INPUT(1, 2) LOAD_INPUT(2, 3) LOAD_INPUT(3, 4) LOAD_INPUT(4, 5)
LOAD_IMM(0) LOAD_IMM(1) LOAD_IMM(2) LOAD_IMM(3) LOAD_IMM(4) LOAD_IMM(5) LOAD_IMM(6) LOAD_IMM(7)
SLOTS(STEP)
STORE_OUTPUT(0, 0) STORE_OUTPUT(1, 6) STORE_OUTPUT(2, 7) STORE_OUTPUT(3, 8)
STORE_OUTPUT(4, 9) STORE_OUTPUT(5, 10) STORE_OUTPUT(6, 11) STORE_OUTPUT(7, 12)
