// SPDX-License-Identifier: GPL-2.0
/* a registry of named handlers kept on a list */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/list.h>

struct kgym_handler {
	struct list_head node;
	const char *name;
};

static struct kgym_handler kgym_handlers[] = {
	{ .name = "net" },
	{ .name = "disk" },
};

static LIST_HEAD(kgym_registry);
static DEFINE_MUTEX(kgym_lock);

static noinline void kgym_list_register(struct kgym_handler *h)
{
	list_add(&h->node, &kgym_registry);
}

static ssize_t kgym_list_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *off)
{
	char name[16] = {};
	int i, err = -ENOENT;

	if (len >= sizeof(name))
		return -EINVAL;
	if (copy_from_user(name, ubuf, len))
		return -EFAULT;
	strim(name);
	mutex_lock(&kgym_lock);
	for (i = 0; i < ARRAY_SIZE(kgym_handlers); i++) {
		if (strcmp(kgym_handlers[i].name, name))
			continue;
		kgym_list_register(&kgym_handlers[i]);
		err = 0;
	}
	mutex_unlock(&kgym_lock);
	return err ? err : len;
}

/* reading the file lists the registered handlers, one name per line */
static ssize_t kgym_list_read(struct file *file, char __user *ubuf,
			      size_t len, loff_t *off)
{
	struct kgym_handler *h;
	char buf[64];
	int n = 0;

	mutex_lock(&kgym_lock);
	list_for_each_entry(h, &kgym_registry, node)
		n += scnprintf(buf + n, sizeof(buf) - n, "%s\n", h->name);
	mutex_unlock(&kgym_lock);
	return simple_read_from_buffer(ubuf, len, off, buf, n);
}

static const struct proc_ops kgym_list_ops = {
	.proc_read = kgym_list_read,
	.proc_write = kgym_list_write,
};

static int __init kgym_list_init(void)
{
	if (!proc_create("kgym_list", 0666, NULL, &kgym_list_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_list_exit(void)
{
	remove_proc_entry("kgym_list", NULL);
}

module_init(kgym_list_init);
module_exit(kgym_list_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_list");
