/*
 * The one intrusive list of the library: a circular doubly linked list
 * with a head of the same type, so that adding at either end and removing
 * any node are O(1), and an empty list needs no special case. A node is
 * embedded in the structure it links (zkr__list_entry() finds that back).
 * Nothing here allocates or locks: the owner of a list guards it.
 */
#ifndef ZKR_LIST_H
#define ZKR_LIST_H

#include <stddef.h>

typedef struct zkr__list {
  struct zkr__list *prev, *next;
} zkr__list;

/* The structure of type @type whose member @member is the node @p. */
#define zkr__list_entry(p, type, member)                                       \
  ((type *)(void *)((char *)(p)-offsetof(type, member)))

/* An empty list (a head), or a node that is in no list. */
static inline void zkr__list_init(zkr__list *l) {
  l->prev = l->next = l;
}

static inline int zkr__list_empty(const zkr__list *head) {
  return head->next == head;
}

/* Is the node @n in a list (added and not removed since)? */
static inline int zkr__list_linked(const zkr__list *n) {
  return n->next != n;
}

static inline void zkr__list_insert_after(zkr__list *pos, zkr__list *n) {
  n->prev = pos;
  n->next = pos->next;
  pos->next->prev = n;
  pos->next = n;
}

/* Add @n at the end (the tail) or at the front of the list @head. */
static inline void zkr__list_push_back(zkr__list *head, zkr__list *n) {
  zkr__list_insert_after(head->prev, n);
}

static inline void zkr__list_push_front(zkr__list *head, zkr__list *n) {
  zkr__list_insert_after(head, n);
}

/* Take @n out of its list; it is then in none. */
static inline void zkr__list_remove(zkr__list *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  zkr__list_init(n);
}

/* The first node, or NULL when the list is empty. */
static inline zkr__list *zkr__list_first(const zkr__list *head) {
  return head->next == head ? NULL : head->next;
}

/* The node after @n in the list @head, or NULL at the end. */
static inline zkr__list *zkr__list_next(const zkr__list *head,
                                        const zkr__list *n) {
  return n->next == head ? NULL : n->next;
}

/* Every node @n of @head, in order, where the body may remove @n (@tmp
 * holds the next one). */
#define zkr__list_for_each_safe(n, tmp, head)                                  \
  for ((n) = (head)->next, (tmp) = (n)->next; (n) != (head);                   \
       (n) = (tmp), (tmp) = (n)->next)

#endif
