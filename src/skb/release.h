/* SPDX-License-Identifier: MIT */
#ifndef USKB_SKB_RELEASE_H
#define USKB_SKB_RELEASE_H

/*
 * The release path of an skb, inline: free.c (uskb_free, uskb_free_bulk)
 * and defer.c (the owner draining its deferred skbs) both run it per skb,
 * so neither pays a call per skb.
 */

#include <stdlib.h>
#include <string.h>
#include "skb/priv.h"

/* skb_unref(): true when the caller dropped the last user reference. */
static inline __attribute__((always_inline)) bool skb_unref(struct uskb *skb)
{
	/* acquire: a sole owner must see every write made by earlier users */
	int old = atomic_load_explicit(&skb->users, memory_order_acquire);

	/* likely: most skbs have one user, who may skip the atomic RMW */
	if (uskb_likely(old == 1))
		return true;
	if (uskb_unlikely(old <= 0))
		uskb_bug("free", skb, "skb %p freed with users=%d (double free?)",
			 (void *)skb, old);
	/* acq_rel: publish our writes; the last dropper must see everyone's */
	return atomic_fetch_sub_explicit(&skb->users, 1, memory_order_acq_rel) == 1;
}

static inline __attribute__((always_inline)) void free_head(struct uskb_tls *t, struct uskb *skb)
{
	uskb_kbuf_free(t, skb->head, skb->__kbuf_class);
}

/*
 * skb_release_data()'s first half: drop this skb's data reference; true
 * when it was the last one.
 */
static inline __attribute__((always_inline)) bool drop_dataref(struct uskb *skb)
{
	/* only when set: a read-modify-write of the flag byte on every free costs */
	if (skb->pp_recycle)
		skb->pp_recycle = 0;
	if (skb->cloned) {
		unsigned int d = skb->nohdr ? (1u << USKB_DATAREF_SHIFT) + 1 : 1;

		/* acq_rel: the last reference must see all others' frag writes */
		if (atomic_fetch_sub_explicit(&uskb_shinfo(skb)->dataref, d,
					      memory_order_acq_rel) != d)
			return false;
	}
	return true;
}

/*
 * skb_release_data()'s second half, after the last data reference went:
 * release frags and frag_list (the head is the caller's to free).
 */
static inline __attribute__((always_inline)) void release_data_last(struct uskb *skb)
{
	struct uskb_shared_info *shinfo = uskb_shinfo(skb);
	int i;

	if (!(shinfo->flags & USKB_SKBFL_MANAGED_FRAG_REFS))
		for (i = 0; i < shinfo->nr_frags; i++)
			uskb_page_put(shinfo->frags[i].page);
	/*
	 * unlikely: user memory in the frags. Its owner hears now, exactly
	 * once — after the frags let go (the kernel completes first; here the
	 * completion frees the descriptors the frags point to).
	 */
	if (uskb_unlikely(shinfo->flags & USKB_SKBFL_ZEROCOPY_ENABLE))
		uskb_zcopy_clear(skb, true);
	if (shinfo->frag_list)
		uskb_free_list(shinfo->frag_list);
}

/*
 * skb_release_data() without the head: drop this skb's data reference;
 * on the last one release frags and frag_list and return true — the head
 * is then the caller's to free.
 */
static inline __attribute__((always_inline)) bool release_data_refs(struct uskb *skb)
{
	if (!drop_dataref(skb))
		return false;
	release_data_last(skb);
	return true;
}

/* skb_release_head_state(). */
static inline void release_head_state(struct uskb *skb)
{
	if (skb->destructor)
		skb->destructor(skb);
}

/* kfree_skbmem(): return the shell (or the fclone pair). */
static inline __attribute__((always_inline)) void free_shell(struct uskb_tls *t, struct uskb *skb)
{
	struct uskb_fclones *fc;

	uskb_count_add(&t->c[USKB_TC_SKB_FREE], 1);
	switch (skb->fclone) {
	case USKB_FCLONE_UNAVAILABLE:
		uskb_shell_put(t, skb);
		return;
	case USKB_FCLONE_ORIG:
		uskb_count_add(&t->c[USKB_TC_FC_SKB_FREE], 1);
		fc = (struct uskb_fclones *)skb;
		/* acquire via acq_rel: the pair is freed only after both halves are done */
		atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
		if (atomic_load_explicit(&fc->fclone_ref, memory_order_acquire) == 1)
			break;
		if (atomic_fetch_sub_explicit(&fc->fclone_ref, 1, memory_order_acq_rel) == 1)
			break;
		return;
	default: /* USKB_FCLONE_CLONE */
		uskb_count_add(&t->c[USKB_TC_FC_SKB_FREE], 1);
		fc = (struct uskb_fclones *)((char *)skb - offsetof(struct uskb_fclones, skb2));
		atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
		uskb_mem_cached(skb, sizeof(*skb));
		if (atomic_fetch_sub_explicit(&fc->fclone_ref, 1, memory_order_acq_rel) == 1)
			break;
		return;
	}
	uskb_count_add(&t->c[USKB_TC_FCLONE_FREE], 1);
	uskb_mem_handed_out(fc, sizeof(*fc));
	free(fc);
}

/* The shared info is as allocated: nothing to release, nothing to init (see uskb_shinfo()). */
static inline __attribute__((always_inline)) bool shinfo_clean(const struct uskb *skb)
{
	/* a cloned skb never has one (uskb_clone() sees to it): a second guard */
	return !skb->cloned && uskb_clean_mark(skb);
}

/*
 * A plain shell (plain_in() tests the same by its word): no destructor,
 * not cloned, no fclone, no page-pool or zero-copy mark, a head that is a
 * kbuf of a class. Returns the skb's __kbuf_class (1 + class), else 0.
 */
static inline __attribute__((always_inline)) unsigned int plain_shell(const struct uskb *skb)
{
	unsigned int cls = skb->__kbuf_class;

	/*
	 * Written with ||, gcc folds the four flag tests into one mask test;
	 * first, so a clone (the commonest other free) leaves after it.
	 */
	if (skb->cloned || skb->fclone || skb->pp_recycle || skb->__zcopy_hint || !cls ||
	    skb->destructor || !skb->head)
		return 0;
	return cls;
}

/*
 * The free path's word, bytes 136..143 of the shell: alloc_cpu, the clean
 * mark, a reserved byte, the flag byte, __kbuf_class and queue_mapping.
 */
_Static_assert(offsetof(struct uskb, queue_mapping) + sizeof(uint16_t) ==
		       offsetof(struct uskb, alloc_cpu) + sizeof(uint64_t),
	       "the free path's word ends with queue_mapping");

static inline __attribute__((always_inline)) uint64_t shell_word(const struct uskb *skb)
{
	uint64_t w;

	memcpy(&w, (const char *)skb + offsetof(struct uskb, alloc_cpu), sizeof(w));
	return w;
}

/*
 * What of the free path's word tells a plain, clean skb and its owner: the
 * owner, the mark, the flags plain_shell() tests and the class (a
 * constant once folded). An skb the same under it as one that is plain
 * (plain_shell()) and clean is so too, but for its destructor and head,
 * which the word does not hold. (cloned is a second guard: a clone never
 * has the mark.)
 */
static inline __attribute__((always_inline)) uint64_t shell_word_mask(void)
{
	struct uskb m;

	memset(&m, 0, sizeof(m));
	m.alloc_cpu = -1;
	m.__shinfo_clean = 0xff;
	m.cloned = 1;
	m.fclone = 3;
	m.pp_recycle = 1;
	m.__zcopy_hint = 1;
	m.__kbuf_class = 0xff;
	return shell_word(&m);
}

/*
 * The shared info's test for an skb of this thread whose shell passed
 * plain_shell() (@cls): @cls when nothing is attached to it, else 0.
 */
static inline __attribute__((always_inline)) unsigned int plain_data(const struct uskb *skb,
								     unsigned int cls)
{
	const struct uskb_shared_info *shinfo;

	/* likely: nothing was attached, and the shared info's line is not read */
	if (uskb_clean_mark(skb))
		return cls;
	shinfo = __uskb_shinfo_peek(skb);
	if (shinfo->nr_frags || shinfo->frag_list)
		return 0;
	return cls;
}

/* The ready list of class @cls - 1 (an skb's __kbuf_class) on @t. */
static inline __attribute__((always_inline)) struct uskb_ready *ready_of(struct uskb_tls *t,
									  unsigned int cls)
{
	struct uskb_ready *r = &t->ready[cls - 1];

	/* (one register: gcc would address each field from t and the class again) */
	uskb_hide_var(r);
	return r;
}

/* @skb's head is a kbuf of a class: its __kbuf_class is 1 + class */
static inline __attribute__((always_inline)) bool has_class(const struct uskb *skb)
{
	/* (a class of 0, a head not a kbuf's, wraps round) */
	return skb->__kbuf_class - 1u < USKB_KBUF_CLASSES;
}

/*
 * The free path's word in parts (shell_word()'s bytes): its first four
 * (owner, clean mark, reserved byte) and its flag byte. One load spanning
 * several recent narrower stores waits for them to reach the cache; a
 * load within one store is forwarded from it. An allocation writes the
 * word in one store, and what commonly follows it writes queue_mapping (a
 * copy, a device) or the flag byte (a clone, tested first): outside these
 * parts, or all of one. (A clean mark cleared since, by uskb_shinfo(),
 * still stalls the four bytes' load; that skb is not plain anyway.)
 */
static inline __attribute__((always_inline)) uint32_t shell_owner_mark(const struct uskb *skb)
{
	uint32_t w;

	memcpy(&w, (const char *)skb + offsetof(struct uskb, alloc_cpu), sizeof(w));
	return w;
}

static inline __attribute__((always_inline)) uint8_t shell_flags(const struct uskb *skb)
{
	return ((const uint8_t *)skb)[offsetof(struct uskb, alloc_cpu) + 4];
}

/* the flag bits a plain skb has none of: cloned, fclone, pp_recycle, __zcopy_hint */
static inline __attribute__((always_inline)) uint8_t plain_flags_mask(void)
{
	return (uint8_t)(shell_word_mask() >> 32);
}

/*
 * The common free: @skb is plain (plain_shell()) and clean, and its
 * owner's, when it has none of the flags, and its owner and clean mark
 * are those of word136 of its class's ready list @r (of its owner's);
 * the destructor and head aside. Then skb_release_data() has nothing to
 * do, and shell and head can stay together as a ready pair. (The class is
 * the caller's: @r is its class's list.)
 */
static inline __attribute__((always_inline)) bool plain_in(const struct uskb_ready *r,
							   const struct uskb *skb)
{
	return !(shell_flags(skb) & plain_flags_mask()) &&
	       shell_owner_mark(skb) == (uint32_t)r->word136 && !skb->destructor && skb->head;
}

/*
 * What an skb of another thread's, its last user gone, carries to its
 * owner, from its plain_shell() @cls: 1 + its class when the owner may
 * keep it as a ready pair without reading it (plain as in plain_in(),
 * the shared info clean), else 0.
 */
static inline __attribute__((always_inline)) unsigned int defer_tag(const struct uskb *skb,
								    unsigned int cls)
{
	return cls && uskb_clean_mark(skb) ? cls : 0;
}

/*
 * Keep @skb (its last user gone, users already 0) as a ready pair of
 * class @cls - 1 in @r, which has room. @vg: uskb_vg_on(), which a bulk
 * caller tests once.
 */
static inline __attribute__((always_inline)) void ready_keep(struct uskb_ready *r,
							     unsigned int *rn, struct uskb *skb,
							     unsigned int cls, bool vg)
{
	if (uskb_unlikely(vg)) {
		uskb_mem_cached(skb->head, uskb_kbuf_class_size((int)cls - 1));
		uskb_mem_cached(skb, sizeof(*skb));
	} else {
		uskb_poison(skb->head, uskb_kbuf_class_size((int)cls - 1));
		uskb_poison(skb, sizeof(*skb));
	}
	r->skb[(*rn)++] = skb;
}

/* ready_keep() of an skb whose users count still says 1 */
static inline __attribute__((always_inline)) void ready_push(struct uskb_ready *r,
							     unsigned int *rn, struct uskb *skb,
							     unsigned int cls, bool vg)
{
	atomic_store_explicit(&skb->users, 0, memory_order_relaxed);
	ready_keep(r, rn, skb, cls, vg);
}

/*
 * When the ready pairs @r have room, keep @skb as one: true when it became
 * a ready pair (the caller counts the free), false with nothing done.
 */
static inline __attribute__((always_inline)) bool ready_room_push(struct uskb_ready *r,
								  struct uskb *skb, bool cache_on)
{
	unsigned int rn = r->n;

	if (!cache_on || rn >= USKB_READY_SIZE)
		return false;
	ready_push(r, &rn, skb, skb->__kbuf_class, uskb_vg_on());
	r->n = rn;
	return true;
}

/*
 * A plain, clean skb of ours (plain_in()) kept as a ready pair when there
 * is room: true when it became one (the caller counts the free), false
 * with nothing done.
 */
static inline __attribute__((always_inline)) bool free_plain(struct uskb_tls *t,
							     struct uskb *skb, bool cache_on)
{
	struct uskb_ready *r;

	/*
	 * The cache is tested after the flags, so that a clone leaves without
	 * it, and before the rest, which would be wasted with the cache off.
	 */
	if (!has_class(skb) || (shell_flags(skb) & plain_flags_mask()) || !cache_on)
		return false;
	r = ready_of(t, skb->__kbuf_class);
	return plain_in(r, skb) && ready_room_push(r, skb, true);
}

/* Release the data and the shell on this thread (the tail of __kfree_skb). */
static inline __attribute__((always_inline)) void free_local(struct uskb_tls *t,
							     struct uskb *skb)
{
	/* likely: a clean shared info holds nothing to release, and its line stays unread */
	if (uskb_likely(skb->head) &&
	    (shinfo_clean(skb) ? drop_dataref(skb) : release_data_refs(skb))) {
		unsigned int cls = skb->__kbuf_class;

		/* likely: a plain skb with a class head: keep the pair for the next alloc */
		if (uskb_likely(cls && skb->fclone == USKB_FCLONE_UNAVAILABLE &&
				t->ready[cls - 1].n < USKB_READY_SIZE &&
				uskb_cfg(&__uskb_cfg.cache_size))) {
			struct uskb_ready *r = &t->ready[cls - 1];

			uskb_count_add(&t->c[USKB_TC_PAIR_FREE], 1);
			ready_push(r, &r->n, skb, cls, uskb_vg_on());
			return;
		}
		free_head(t, skb);
	}
	free_shell(t, skb);
}

#endif
