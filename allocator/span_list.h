/* allocator/span_list.h - the doubly linked list of span descriptors (through
 * next/prev), used by the page heap's free lists and the central lists' nonempty
 * lists. The caller holds the lock that guards the list. in_list is 1 exactly while
 * the span is on some list. */
#ifndef VC_SPAN_LIST_H
#define VC_SPAN_LIST_H

#include "internal.h"

static inline void vc_span_list_push(struct vc_span **head, struct vc_span *sp)
{
	sp->prev = NULL;
	sp->next = *head;
	if (*head)
		(*head)->prev = sp;
	*head = sp;
	sp->in_list = 1;
}

static inline void vc_span_list_remove(struct vc_span **head, struct vc_span *sp)
{
	if (sp->prev)
		sp->prev->next = sp->next;
	else
		*head = sp->next;
	if (sp->next)
		sp->next->prev = sp->prev;
	sp->next = sp->prev = NULL;
	sp->in_list = 0;
}

#endif
