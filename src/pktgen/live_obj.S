/* SPDX-License-Identifier: MIT */
/* The live program's ELF image (bpf/pktgen_live.c, compiled), for src/pktgen/live.c. */
	.section .rodata
	.balign 8
	.globl __uskb_pg_live_obj
	.hidden __uskb_pg_live_obj
	.type __uskb_pg_live_obj, @object
__uskb_pg_live_obj:
	.incbin USKB_LIVE_OBJ
	.globl __uskb_pg_live_obj_end
	.hidden __uskb_pg_live_obj_end
__uskb_pg_live_obj_end:
	.section .note.GNU-stack, "", @progbits
